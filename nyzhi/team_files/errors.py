"""The teams package's errors, all ``ValueError`` so callers that validate input catch them.

    TeamError            bad name, unknown member or task, corrupt file, refused transition
    ├── TeamNotFound     no team of that name
    └── TaskClaimError   the task is owned by another member

The message is for the user or the model as it stands: it names the file, key, member or task
and says what is allowed.
"""

from __future__ import annotations


class TeamError(ValueError):
    """A team operation was refused; ``str()`` says why and what would work."""


class TeamNotFound(TeamError):
    """The team does not exist (never created, or deleted)."""


class TaskClaimError(TeamError):
    """Another member already owns the task: exactly one member works on a task."""
