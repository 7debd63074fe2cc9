"""What teams and members may be called.

Names become file names (``teams/<team>/inboxes/<member>.json``), so they are limited to a
safe alphabet that cannot climb out of the directory or hide a file. ``all`` addresses every
member and ``user`` is the human, so neither can be a member's name.
"""

from __future__ import annotations

import re

from nyzhi.team_files.errors import TeamError

LEAD = "lead"
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
RESERVED_MEMBER_NAMES = ("all", "user")
_ALLOWED = "1-64 characters: letters, digits, '_', '.', '-', starting with a letter or digit"


def check_name(kind: str, value: str) -> str:
    """``value`` if it is a valid ``kind`` name ("team", "member", or "sender", which may also
    be ``user``); else a ``TeamError`` saying what is allowed."""
    if not isinstance(value, str) or not NAME_RE.fullmatch(value):
        raise TeamError(f"invalid {kind} name {value!r}: use {_ALLOWED}")
    reserved = {"member": RESERVED_MEMBER_NAMES, "sender": ("all",)}.get(kind, ())
    if value.lower() in reserved:
        raise TeamError(
            f"invalid {kind} name {value!r}: 'all' and 'user' are reserved (they address every "
            "member and the human)"
        )
    return value
