"""Helpers for the MCP tests: count server process starts, write server config."""

from __future__ import annotations

from pathlib import Path


def counted(command: list[str], pidfile: Path) -> tuple[str, list[str]]:
    """``command`` wrapped so each start appends its pid to ``pidfile`` (exec keeps the pid)."""
    quoted = " ".join(_sh_quote(c) for c in command)
    return "sh", ["-c", f"echo $$ >> {_sh_quote(str(pidfile))}; exec {quoted}"]


def _sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def pids(pidfile: Path) -> list[int]:
    try:
        return [int(x) for x in pidfile.read_text().split()]
    except FileNotFoundError:
        return []


def toml_server(name: str, command: str, args: list[str], extra: str = "") -> str:
    arr = ", ".join(_toml_str(a) for a in args)
    return f"\n[mcp.servers.{name}]\ncommand = {_toml_str(command)}\nargs = [{arr}]\n{extra}\n"


def _toml_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
