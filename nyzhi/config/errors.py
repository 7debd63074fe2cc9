"""Errors raised while loading or editing configuration.

    ConfigError            one or more problems, each naming file, key, expected and found
      (carries .problems: tuple[ConfigProblem, ...])
    ConfigWarning          not an exception: an unknown or inactive key, reported, not fatal

A ConfigError is meant to be shown to the user as is: ``str(err)`` is complete and actionable.
"""

from __future__ import annotations

from pathlib import Path

from nyzhi import records


@records.frozen
class ConfigProblem:
    """One thing wrong with one key of one file."""

    file: Path | None  # None: not from a file (e.g. a CLI override)
    key: str  # dotted key path, e.g. "agent.trust.mode"; "" for the whole file
    expected: str
    found: str
    hint: str = ""

    def __str__(self) -> str:
        where = f"{self.file}: " if self.file is not None else ""
        key = self.key or "(file)"
        text = f"{where}{key}: expected {self.expected}, found {self.found}"
        if self.hint:
            text += f" ({self.hint})"
        return text


@records.frozen
class ConfigWarning:
    """Something in a file that does not stop loading but that the user should hear about:
    a key nothing knows (a typo, ignored) or a key that is not yet active."""

    file: Path | None
    key: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: " if self.file is not None else ""
        return f"{where}{self.key}: {self.message}"


class ConfigError(Exception):
    """Configuration that cannot be used. Loading never modifies any file."""

    def __init__(self, problems: list[ConfigProblem] | ConfigProblem | str):
        if isinstance(problems, str):
            self.problems: tuple[ConfigProblem, ...] = ()
            message = problems
        else:
            if isinstance(problems, ConfigProblem):
                problems = [problems]
            self.problems = tuple(problems)
            lines = [str(p) for p in self.problems]
            message = lines[0] if len(lines) == 1 else "invalid configuration:\n  " + "\n  ".join(lines)
        super().__init__(message)

    @property
    def file(self) -> Path | None:
        return self.problems[0].file if self.problems else None

    @property
    def key(self) -> str | None:
        return self.problems[0].key if self.problems else None
