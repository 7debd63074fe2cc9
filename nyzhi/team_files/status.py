"""A task's status: its own module so the team tools' schemas can list the values without
building the board's classes at start-up."""

from __future__ import annotations

import enum


class TaskStatus(enum.StrEnum):
    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    BLOCKED = "blocked"
    DELETED = "deleted"
