"""Custom slash commands: a prompt template run as ``/name args``.

Sources, later ones replacing earlier ones of the same name:

1. ``<root>/.claude/commands/*.md`` (Claude Code);
2. ``<root>/.nyzhi/commands/*.md``;
3. active plugins' ``commands/*.md`` (``nyzhi.config.plugins``), named ``plugin:command`` as
   Claude Code names them;
4. ``[[agent.commands]]`` in the config (``name``, ``prompt``, ``description``), global then
   project then local.

A file's name is its stem; its description is the front matter's ``description``, else a
first ``# heading`` line (which is then not part of the prompt). In the template
``$ARGUMENTS`` becomes everything after the name and ``$1`` … ``$9`` the words of it; a
template that uses neither gets the arguments appended, so they are never lost.

The front matter is YAML (``nyzhi.knowledge.frontmatter``): Claude Code's keys are accepted,
``description`` is used (capped), any other key is a notice. A file whose front matter cannot
be read is left out with a one-line notice naming it.

``expand`` is what front ends call before submitting input: a leading ``/name`` that names a
custom command becomes the command's prompt; anything else comes back unchanged (an unknown
``/x`` is sent as text, as typed).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from nyzhi import records
from nyzhi.config.prompt_files import prompt_roots, read_prompt_file, resolve_roots
from nyzhi.knowledge import frontmatter as fm
from nyzhi.textcut import cut

COMMAND_DIRS: tuple[str, ...] = (".claude/commands", ".nyzhi/commands")
# Front matter keys of a command file (Claude Code's); ``description`` and ``allowed-tools``
# are used.
COMMAND_KEYS: dict[str, fm.Key] = {
    "description": fm.Key(fm.TEXT), "argument-hint": fm.Key(fm.ANY),
    "allowed-tools": fm.Key(fm.ANY), "model": fm.Key(fm.ANY),
    "disable-model-invocation": fm.Key(fm.ANY),
}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")


@records.frozen
class Command:
    name: str
    template: str
    description: str = ""
    source: str = ""  # a file path or "config"
    # Claude Code's ``allowed-tools`` (``Bash(git status:*)``, ``Read``): which of the
    # template's ``!`cmd` `` lines may run (``nyzhi.core.runtime.command_files``).
    allowed_tools: tuple[str, ...] = ()

    def render(self, arguments: str) -> str:
        arguments = arguments.strip()
        words = arguments.split()
        text = self.template.replace("$ARGUMENTS", arguments)
        text = re.sub(r"\$([1-9])", lambda m: _nth(words, int(m.group(1))), text)
        uses_args = "$ARGUMENTS" in self.template or re.search(r"\$[1-9]", self.template)
        if arguments and not uses_args:
            text = f"{text.rstrip()}\n\nARGUMENTS: {arguments}"
        return text.strip()


def _nth(words: list[str], n: int) -> str:
    return words[n - 1] if n <= len(words) else ""


def _from_file(path: Path, root: Path, notes: list[str] | None = None,
               roots: Iterable[Path] = ()) -> Command | None:
    try:  # a command file resolving outside the workspace is refused (config.prompt_files)
        text = read_prompt_file(path, roots or prompt_roots(root))
    except OSError:
        return None
    try:
        fields, body = fm.split_front_matter(text, path)
        meta, warnings = fm.check_fields(fields, COMMAND_KEYS, path)
    except fm.FrontMatterError as exc:
        if notes is not None:
            notes.append(f"command left out: {exc}")
        return None
    if notes is not None:
        notes.extend(warnings)
    description = meta.get("description", "")
    lines = body.strip().splitlines()
    if lines and lines[0].startswith("# ") and not description:
        description, lines = cut(lines[0][2:].strip(), fm.TEXT_CAP, one_line=False, rstrip=True), lines[1:]
    allowed = meta.get("allowed-tools") or ()
    if isinstance(allowed, str):
        allowed = [a for a in re.split(r",\s*(?![^()]*\))", allowed) if a.strip()]
    allowed = tuple(str(a).strip() for a in allowed if isinstance(a, str | int))
    return Command(path.stem, "\n".join(lines).strip(), description, str(path), allowed)


def load_commands(
    root: Path, configured: Iterable[Any] = (), notes: list[str] | None = None,
) -> dict[str, Command]:
    """Every custom command by name (see the module docstring for precedence).
    ``configured`` holds ``[[agent.commands]]`` entries (``name``, ``prompt``,
    ``description``). Notices about command files are appended to ``notes``."""
    found: dict[str, Command] = {}
    roots = resolve_roots(prompt_roots(root))  # once, not per command file
    for rel in COMMAND_DIRS:
        base = root / rel
        if base.is_dir():
            for path in sorted(base.glob("*.md")):
                if not _NAME.fullmatch(path.stem) or len(path.stem) > fm.NAME_CAP:
                    if notes is not None:
                        notes.append(f"command left out: {path}: its name is not letters, "
                                     f"digits and '_.:-' of at most {fm.NAME_CAP} characters")
                    continue
                command = _from_file(path, root, notes, roots)
                if command is not None:
                    found[command.name] = command
    from nyzhi.config.plugins import plugin_dirs

    for plugin, base in plugin_dirs(root, "commands"):
        for path in sorted(base.glob("*.md")):
            if _NAME.fullmatch(path.stem) and len(path.stem) <= fm.NAME_CAP:
                command = _from_file(path, root, notes, roots)
                if command is not None:
                    found[f"{plugin}:{command.name}"] = attrs.evolve(
                        command, name=f"{plugin}:{command.name}")
    for entry in configured:
        found[entry.name] = Command(entry.name, entry.prompt, entry.description or "", "config")
    return found


def split_invocation(text: str) -> tuple[str, str] | None:
    """(name, arguments) when ``text`` starts with ``/name``, else None."""
    match = re.match(r"\s*/([A-Za-z0-9][A-Za-z0-9_.:-]*)(?:\s+(.*))?\s*$", text, re.S)
    return (match.group(1), match.group(2) or "") if match else None


def expand(text: str, commands: Mapping[str, Command]) -> str:
    """``text`` with a leading custom ``/name args`` replaced by the command's prompt;
    unchanged when it does not start with one."""
    invocation = split_invocation(text)
    if invocation is None or invocation[0] not in commands:
        return text
    name, arguments = invocation
    return commands[name].render(arguments)

