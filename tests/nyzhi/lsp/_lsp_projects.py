"""The small Python and TypeScript projects the LSP tests and benchmark work on."""

PY_SHAPES = '''\
class Circle:
    def __init__(self, radius: float) -> None:
        self.radius = radius

    def area(self) -> float:
        return 3.14159 * self.radius**2


def total_area(circles: list[Circle]) -> float:
    return sum(c.area() for c in circles)
'''

PY_MAIN = '''\
from shapes import Circle, total_area

print(total_area([Circle(1.0), Circle(2.0)]))
'''

TS_SHAPES = '''\
export class Circle {
  constructor(public radius: number) {}

  area(): number {
    return 3.14159 * this.radius ** 2;
  }
}

export function totalArea(circles: Circle[]): number {
  return circles.reduce((sum, c) => sum + c.area(), 0);
}
'''

TS_MAIN = '''\
import { Circle, totalArea } from "./shapes";

const total: number = totalArea([new Circle(1), new Circle(2)]);
console.log(total);
'''

TSCONFIG = '{"compilerOptions": {"strict": true, "target": "es2020", "module": "commonjs"}}\n'
