"""What a Claude Code command file does before its prompt is sent: ``!`cmd` `` and ``@file``.

Claude Code command files (the official ``commit`` command among them) embed
``!`git status` `` to put a command's output into the prompt, and ``@path`` to put a file's
content there. Both run here as the agent's own tool calls, through the same gates: the
``bash`` tool for a command (the sandbox, deny rules and trust mode apply, and a call that
needs approval is asked about), the ``read`` tool for a file. A command runs only when the
file's ``allowed-tools`` allows it (``Bash``, ``Bash(git status:*)`` for ``git status`` with any
arguments, ``Bash(npm test)`` for exactly that); otherwise the line says it was not run. Only
text that came from expanding a command file is treated so: typed text is sent as typed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

SHELL = re.compile(r"!`([^`\n]+)`")
FILE_REF = re.compile(r"(?<![\w@`])@((?:\.{0,2}/)?[\w][\w./-]*)")
OUTPUT_CAP = 20_000  # characters of one command's output or one file kept in the prompt
_RULE = re.compile(r"^Bash(?:\((.*)\))?$")


def allows(allowed_tools: tuple[str, ...], command: str) -> bool:
    """Whether ``allowed-tools`` lets ``command`` run as a ``!`` line."""
    command = command.strip()
    for rule in allowed_tools:
        match = _RULE.match(rule.strip())
        if match is None:
            continue
        spec = match.group(1)
        if spec is None or spec in ("", "*"):
            return True
        if spec.endswith(":*"):
            prefix = spec[:-2].strip()
            if command == prefix or command.startswith(prefix + " "):
                return True
        elif spec.endswith("*"):
            if command.startswith(spec[:-1]):
                return True
        elif command == spec.strip():
            return True
    return False


async def _call(tooling: Any, name: str, args: dict[str, Any], call_id: str) -> tuple[bool, str]:
    tool = tooling.registry.get(name)
    if tool is None:
        return False, f"(no {name} tool)"
    decision = await tooling.gates.check(tool, args, tooling.context, call_id=call_id)
    if not decision.allowed:
        return False, f"(not run: {decision.reason})"
    result = await tool.run(args, tooling.context)
    text = tooling.redactor.redact(result.output) if hasattr(tooling, "redactor") else (
        result.output)
    return not result.is_error, text[:OUTPUT_CAP]


async def prepare(text: str, allowed_tools: tuple[str, ...], tooling: Any) -> str:
    """``text`` (an expanded command file) with each ``!`cmd` `` replaced by the command's
    output and the content of each existing ``@file`` appended."""
    out: list[str] = []
    pos = 0
    for n, match in enumerate(SHELL.finditer(text)):
        out.append(text[pos:match.start()])
        command = match.group(1)
        if allows(allowed_tools, command):
            _ok, output = await _call(tooling, "bash", {"command": command}, f"cmdfile-{n}")
            out.append(output.rstrip())
        else:
            out.append(f"(`{command}` not run: the command file's allowed-tools does not "
                       "allow it)")
        pos = match.end()
    out.append(text[pos:])
    result = "".join(out)
    cwd = Path(tooling.context.cwd)
    files = []
    for n, ref in enumerate(dict.fromkeys(FILE_REF.findall(result))):
        if not (cwd / ref).is_file():
            continue
        ok, content = await _call(tooling, "read", {"file_path": ref}, f"cmdfile-at-{n}")
        if ok:
            files.append(f"<file path=\"{ref}\">\n{content}\n</file>")
    return "\n\n".join([result, *files]) if files else result
