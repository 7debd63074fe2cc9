"""Property tests: random crashes, completions, stops and clock jumps under a supervisor.

A small model of OTP semantics predicts, after every step, each child's restart count and
liveness, whether the supervisor escalates, and the shutdown order; the real system must
agree, and leave no task behind. Time is a manual MockClock moved only by the test, so
intensity windows are exact.
"""

from __future__ import annotations

import functools

import attrs
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

import actors
from actors import Restart, Strategy
from actors.testing import live_tasks


class Child(actors.Actor):
    def __init__(self, log: list[str]) -> None:
        self.log = log

    async def stopping(self) -> None:
        self.log.append(self.context.name)

    async def receive(self, message: object) -> None:
        if message == "crash":
            raise RuntimeError("crash")
        if message == "complete":
            self.context.stop()


@attrs.define
class ModelChild:
    name: str
    restart: Restart
    alive: bool = True
    restarts: int = 0


@attrs.define
class Model:
    strategy: Strategy
    max_restarts: int
    within: float
    children: list[ModelChild]
    stamps: list[float] = attrs.field(factory=list)
    escalated: bool = False

    def live(self) -> list[ModelChild]:
        return [c for c in self.children if c.alive]

    def end(self, child: ModelChild, kind: str, now: float) -> None:
        if kind == "stop":
            child.alive = False
            return
        wants = child.restart is Restart.PERMANENT or (
            child.restart is Restart.TRANSIENT and kind == "crash"
        )
        if not wants:
            child.alive = False
            return
        self.stamps = [s for s in self.stamps if s > now - self.within]
        if len(self.stamps) >= self.max_restarts:
            self.escalated = True
            for c in self.children:
                c.alive = False
            return
        self.stamps.append(now)
        child.restarts += 1
        live = self.live()
        if self.strategy is Strategy.ONE_FOR_ALL:
            group = live
        elif self.strategy is Strategy.REST_FOR_ONE:
            group = live[live.index(child) :]
        else:
            group = []
        for c in group:
            if c is child:
                continue
            if c.restart is Restart.TEMPORARY:
                c.alive = False
            else:
                c.restarts += 1


restart_types = st.sampled_from(list(Restart))
steps = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["crash", "complete", "stop"]), st.integers(0, 4)),
        st.tuples(st.just("advance"), st.sampled_from([0.5, 1.0, 3.0, 10.0])),
    ),
    max_size=12,
)


@settings(max_examples=100, deadline=None)
@given(
    types=st.lists(restart_types, min_size=1, max_size=5),
    strategy=st.sampled_from(list(Strategy)),
    max_restarts=st.integers(0, 4),
    within=st.sampled_from([1.0, 5.0, 20.0]),
    ops=steps,
)
def test_random_failures_match_the_otp_model(types, strategy, max_restarts, within, ops):
    names = [f"c{i}" for i in range(len(types))]
    model = Model(
        strategy,
        max_restarts,
        within,
        [ModelChild(n, t) for n, t in zip(names, types, strict=True)],
    )
    clock = trio.testing.MockClock()

    async def scenario() -> None:
        log: list[str] = []
        before = live_tasks()
        specs = [
            actors.ChildSpec(Child, (log,), name=n, restart=t)
            for n, t in zip(names, types, strict=True)
        ]
        sup_factory = functools.partial(actors.Supervisor, specs, strategy, max_restarts, within)
        refs: dict[str, actors.ActorRef] = {}
        raised: BaseException | None = None
        try:
            async with actors.open_system() as system:
                sup = system.spawn(sup_factory, name="sup")
                await trio.testing.wait_all_tasks_blocked()
                refs = {ref.name: ref for ref in sup.children}
                assert list(refs) == names
                for op, arg in ops:
                    if model.escalated:
                        break
                    if op == "advance":
                        clock.jump(arg)
                        await trio.testing.wait_all_tasks_blocked()
                        continue
                    live = model.live()
                    if not live:
                        continue
                    child = live[arg % len(live)]
                    ref = refs[child.name]
                    model.end(child, op, clock.current_time())  # predict first: an
                    if op == "stop":  # escalation cancels this block
                        await ref.stop()
                    else:
                        ref.tell_nowait(op)
                    await trio.testing.wait_all_tasks_blocked()
                    if not model.escalated:
                        for c in model.children:
                            assert refs[c.name].restarts == c.restarts, (c, ops)
                            assert (refs[c.name].outcome is None) == c.alive, (c, ops)
                del log[:]
                expected_shutdown = [c.name for c in reversed(model.live())]
        except actors.RestartIntensityExceeded as exc:
            raised = exc
        if model.escalated:
            assert isinstance(raised, actors.RestartIntensityExceeded), ops
            assert all(ref.outcome is not None for ref in refs.values())
        else:
            assert raised is None
            assert log == expected_shutdown
            assert all(ref.status.terminal for ref in refs.values())
        assert live_tasks() <= before

    trio.run(scenario, clock=clock)
