"""Argument checking and result helpers shared by the built-in tools.

Models send malformed arguments often enough that every tool validates its own and answers with
an error the model can act on ("'limit' must be an integer ≥ 1, got 'ten'") instead of raising.
"""

from __future__ import annotations

from typing import Any

from nyzhi.oserror import StorageError
from nyzhi.tools.base import Tool, ToolContext, ToolResult
from nyzhi.tools.paths import ToolPathError


class ArgError(Exception):
    """A bad argument; the message goes back to the model as an error result."""


def error(message: str, **metadata: Any) -> ToolResult:
    return ToolResult(output=message, is_error=True, metadata=metadata)


def req_str(args: dict[str, Any], key: str, *, allow_empty: bool = False) -> str:
    value = args.get(key)
    if not isinstance(value, str):
        raise ArgError(f"'{key}' is required and must be a string")
    if not allow_empty and not value:
        raise ArgError(f"'{key}' must not be empty")
    return value


def opt_str(args: dict[str, Any], key: str) -> str | None:
    value = args.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ArgError(f"'{key}' must be a string, got {type(value).__name__}")
    return value


def opt_int(
    args: dict[str, Any], key: str, default: int, *, minimum: int = 0, maximum: int | None = None
) -> int:
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ArgError(f"'{key}' must be an integer ≥ {minimum}, got {value!r}")
    if maximum is not None:
        value = min(value, maximum)
    return value


def opt_bool(args: dict[str, Any], key: str, default: bool) -> bool:
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if not isinstance(value, bool):
        raise ArgError(f"'{key}' must be true or false, got {value!r}")
    return value


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def os_error_text(exc: OSError) -> str:
    if isinstance(exc, StorageError):  # already says what, where and why
        return str(exc)
    text = f"{exc.filename}: {exc.strerror or exc}" if exc.filename else str(exc)
    if isinstance(exc, FileNotFoundError):
        text += "; check the path with glob or list_dir"  # the model's usual slip: a wrong path
    return text


class BuiltinTool(Tool):
    """A tool whose bad arguments, refused paths and OS errors become error results.

    Subclasses implement ``execute``; ``run`` maps the expected failures so each tool body can
    simply raise. Anything else is a bug and propagates to the executor.
    """

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raise NotImplementedError

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if not isinstance(args, dict):
            return error(f"{self.name}: arguments must be a JSON object")
        try:
            return await self.execute(args, ctx)
        except (ArgError, ToolPathError) as exc:
            return error(str(exc))
        except OSError as exc:
            return error(os_error_text(exc))
