"""The start-up pause of the garbage collector restores what it found."""

from __future__ import annotations

import gc

from nyzhi.core import collector


def test_paused_turns_the_collector_off_and_back_on() -> None:
    assert gc.isenabled()
    with collector.paused():
        assert not gc.isenabled()
        collector.resume()  # the run path resumes early; the block's end then does nothing
        assert gc.isenabled()
    assert gc.isenabled()


def test_a_collector_already_off_stays_off() -> None:
    gc.disable()
    try:
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
