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


def test_resume_can_freeze_what_exists() -> None:
    collector.pause()
    try:
        assert not gc.isenabled()
    finally:
        collector.resume(freeze=True)
    try:
        assert gc.isenabled() and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
