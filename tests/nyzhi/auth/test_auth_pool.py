"""Rotation after a 429 with Retry-After cooldowns, on a deterministic clock."""

from nyzhi.auth import Account, AccountPool, static_key_source
from nyzhi.provider.types import KeySource


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def pool(*keys, clock, **kw):
    return AccountPool("p", [Account(k, k, "auth.json") for k in keys], clock=clock, **kw)


def test_is_a_key_source():
    assert isinstance(pool("a", clock=Clock()), KeySource)
    assert isinstance(static_key_source("k"), KeySource)
    assert static_key_source(None).current_key() is None


def test_rotates_after_429_and_honours_retry_after():
    clock = Clock()
    p = pool("k1", "k2", "k3", clock=clock)
    assert p.current_key() == "k1"
    assert p.report_rate_limited("k1", 30.0) is True
    assert p.current_key() == "k2"
    assert p.report_rate_limited("k2", 10.0) is True
    assert p.current_key() == "k3"
    assert p.report_rate_limited("k3", 20.0) is False  # nobody usable right now
    assert p.current_key() == "k2"  # the one that recovers first
    assert p.next_available_in() == 10.0
    clock.now += 10.0
    assert p.current_key() == "k2"
    clock.now += 10.0  # k3 is back too; rotation stays on k2 until it is limited again
    assert p.current_key() == "k2"
    assert p.report_rate_limited("k2", None) is True  # default cooldown (60 s)
    assert p.current_key() == "k3"
    clock.now += 10.0  # k1 (30 s) is usable again
    assert [s.cooldown_remaining for s in p.states()] == [0.0, 50.0, 0.0]


def test_default_cooldown_and_single_account():
    clock = Clock()
    p = pool("only", clock=clock, default_cooldown=5.0)
    assert p.report_rate_limited("only", None) is False
    assert p.current_key() == "only"  # still handed out: the provider's retry waits
    assert p.next_available_in() == 5.0
    clock.now += 5.0
    assert p.next_available_in() == 0.0


def test_unknown_key_and_empty_pool():
    clock = Clock()
    p = pool("a", "b", clock=clock)
    assert p.report_rate_limited("stale", 3.0) is True
    assert p.current_key() == "a"
    empty = AccountPool("p", [], clock=clock)
    assert empty.current_key() is None and empty.next_available_in() is None
    assert empty.report_rate_limited("x", 1.0) is False


def test_initial_cooldowns_and_callback():
    clock = Clock()
    seen = []
    p = pool("a", "b", clock=clock, cooldowns={"a": 7.0},
             on_rate_limited=lambda acc, secs: seen.append((acc.label, secs)))
    assert p.current_key() == "b"
    p.report_rate_limited("b", 2.5)
    assert seen == [("b", 2.5)]
    assert "k" not in repr(p).replace("AccountPool", "")  # no keys in repr
