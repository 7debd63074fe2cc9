"""Checkpoints and rewind: every user prompt is a point to come back to, for the files the
agents changed (kept in a shadow store under XDG state, ``store``), the conversation, or both.

``recorder`` records them as the session runs; ``rewind`` plans and makes a restore;
``actions`` are what the commands (``/rewind``, ``/undo all``, ``/checkpoint``, ``/retry``)
and ``nyz rewind`` do with them.
"""

from nyzhi.core.runtime.checkpoints.recorder import Recorder as Recorder
from nyzhi.core.runtime.checkpoints.store import NOT_TRACKED as NOT_TRACKED
from nyzhi.core.runtime.checkpoints.store import CheckpointError as CheckpointError
from nyzhi.core.runtime.checkpoints.store import CheckpointStore as CheckpointStore
