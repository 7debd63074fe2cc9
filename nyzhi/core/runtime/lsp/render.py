"""Language-server answers as the model reads them: short ``path:line`` lines with the source
line for context, never raw LSP JSON. Works on ``lsprotocol`` objects by attribute, so this
module does not import it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from nyzhi.core.runtime.lsp.text import char_column, line_at, path_of
from nyzhi.textcut import cut

MAX_LINES = 200
CONTEXT_CHARS = 160
SEVERITY = {1: "error", 2: "warning", 3: "info", 4: "hint"}
SYMBOL_KIND = {
    1: "file", 2: "module", 3: "namespace", 4: "package", 5: "class", 6: "method",
    7: "property", 8: "field", 9: "constructor", 10: "enum", 11: "interface", 12: "function",
    13: "variable", 14: "constant", 15: "string", 16: "number", 17: "boolean", 18: "array",
    19: "object", 20: "key", 21: "null", 22: "enum member", 23: "struct", 24: "event",
    25: "operator", 26: "type parameter",
}


def _any_path(_path: Path) -> bool:
    return True


class Sources:
    """File texts read once per answer (for the context line of each location). A server
    names any path it likes: ``readable`` (the sandbox's read rule) decides which nyz reads,
    so a location in a credential file shows no line of it."""

    def __init__(self, readable: Callable[[Path], bool] = _any_path) -> None:
        self.texts: dict[Path, str] = {}
        self.readable = readable

    def text(self, path: Path) -> str:
        if path not in self.texts and not self.readable(path):
            self.texts[path] = ""
        if path not in self.texts:
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    self.texts[path] = fh.read(4 * 1024 * 1024)
            except OSError:
                self.texts[path] = ""
        return self.texts[path]


def shown(path: Path, workspace: Path) -> str:
    from nyzhi.config.paths import display_path

    return display_path(path, workspace)


def _context(text: str, line: int) -> str:
    src = line_at(text, line).strip()
    return cut(src, CONTEXT_CHARS, one_line=False)


def location_line(path: Path, start: Any, workspace: Path, sources: Sources) -> str:
    text = sources.text(path)
    col = char_column(line_at(text, start.line), start.character)
    return f"{shown(path, workspace)}:{start.line + 1}:{col}: {_context(text, start.line)}"


def locations(result: Any) -> list[tuple[Path, Any]]:
    """(path, start position) of a Location, a list of them, or LocationLinks."""
    if result is None:
        return []
    items = result if isinstance(result, list | tuple) else [result]
    out = []
    for item in items:
        uri = getattr(item, "uri", None) or getattr(item, "target_uri", None)
        rng = getattr(item, "range", None) or getattr(item, "target_selection_range", None)
        if uri is None or rng is None:
            continue
        try:
            out.append((path_of(uri), rng.start))
        except ValueError:
            continue
    return out


def render_locations(found: list[tuple[Path, Any]], workspace: Path,
                     limit: int = MAX_LINES, readable: Callable[[Path], bool] = _any_path,
                     ) -> list[str]:
    sources = Sources(readable)
    seen: set[tuple[Path, int, int]] = set()
    lines = []
    for path, start in sorted(found, key=lambda f: (str(f[0]), f[1].line, f[1].character)):
        key = (path, start.line, start.character)
        if key in seen:
            continue
        seen.add(key)
        lines.append(location_line(path, start, workspace, sources))
    if len(lines) > limit:
        lines = lines[:limit] + [f"… and {len(lines) - limit} more"]
    return lines


def render_diagnostics(items: Iterable[tuple[Path, Any]], workspace: Path,
                       readable: Callable[[Path], bool] = _any_path) -> list[str]:
    sources = Sources(readable)
    out = []
    for path, diag in items:
        start = diag.range.start
        col = char_column(line_at(sources.text(path), start.line), start.character)
        severity = SEVERITY.get(int(diag.severity), "error") if diag.severity else "error"
        code = f" ({diag.code})" if diag.code not in (None, "") else ""
        message = " ".join(str(diag.message).split())
        out.append(f"{shown(path, workspace)}:{start.line + 1}:{col}: {severity}: "
                   f"{message}{code}")
    return out


def hover_text(result: Any, limit: int = 4000) -> str:
    if result is None:
        return ""
    contents = result.contents
    parts: list[str] = []
    for item in contents if isinstance(contents, list | tuple) else [contents]:
        if isinstance(item, str):
            parts.append(item)
        elif hasattr(item, "value"):
            language = getattr(item, "language", None)
            parts.append(f"```{language}\n{item.value}\n```" if language else item.value)
    text = "\n\n".join(p.strip() for p in parts if p and p.strip())
    return text if len(text) <= limit else text[:limit] + "\n…"


def render_symbols(result: Any, path: Path | None, workspace: Path) -> list[str]:
    """Document symbols (nested, indented) or workspace symbols, one ``path:line`` each."""
    lines: list[str] = []

    def walk(symbols: list[Any], depth: int) -> None:
        for sym in symbols:
            kind = SYMBOL_KIND.get(int(sym.kind), "symbol")
            if hasattr(sym, "selection_range") and path is not None:  # DocumentSymbol
                at = f"{shown(path, workspace)}:{sym.selection_range.start.line + 1}"
                detail = f" {sym.detail}" if getattr(sym, "detail", None) else ""
                lines.append(f"{'  ' * depth}{at}: {kind} {sym.name}{detail}")
                walk(list(sym.children or ()), depth + 1)
                continue
            loc = getattr(sym, "location", None)
            uri = getattr(loc, "uri", None)
            rng = getattr(loc, "range", None)
            try:
                where = shown(path_of(uri), workspace) if uri else "?"
            except ValueError:
                where = uri or "?"
            line = f":{rng.start.line + 1}" if rng is not None else ""
            container = f" (in {sym.container_name})" if getattr(sym, "container_name", None) \
                else ""
            lines.append(f"{'  ' * depth}{where}{line}: {kind} {sym.name}{container}")

    walk(list(result or ()), 0)
    if len(lines) > MAX_LINES:
        lines = lines[:MAX_LINES] + [f"… and {len(lines) - MAX_LINES} more"]
    return lines
