"""Skills: instructions for one kind of task, loaded only when a task calls for them.

A skill is ``<root>/.nyzhi/skills/NAME/SKILL.md`` or Claude Code's
``<root>/.claude/skills/NAME/SKILL.md``, with front matter ``name`` and ``description``
(nyzhi 3.x's flat ``.nyzhi/skills/NAME.md`` files are read too). Only the index, each skill's
name and description, goes into the system prompt; ``load_skill(name)`` returns the body
when the model decides it needs it. That keeps dozens of skills from costing a token until
one is used. Where both directories define a name, ``.nyzhi`` wins.

The front matter is YAML (``nyzhi.knowledge.frontmatter``). A skill whose front matter cannot
be read, or whose name is not one line of at most ``NAME_CAP`` characters, is left out with a
one-line notice naming the file; its description is capped (``DESCRIPTION_CAP``) and put on
one line, since the index is one line per skill.

Skill files are read through ``nyzhi.config.prompt_files``: one that resolves outside the
workspace (a symlinked ``SKILL.md`` or skill directory) is skipped with a notice.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import attrs

from nyzhi import records
from nyzhi.config.prompt_files import prompt_roots, read_prompt_file, resolve_roots
from nyzhi.knowledge import frontmatter as fm
from nyzhi.textcut import cut

SKILL_DIRS: tuple[str, ...] = (".nyzhi/skills", ".claude/skills")
SKILL_FILE = "SKILL.md"
DESCRIPTION_CAP = 300  # characters of a description in the prompt's skill index

# Front matter keys of a skill (Claude Code's and the Agent Skills' spec ones too).
SKILL_KEYS: dict[str, fm.Key] = {
    "name": fm.Key(fm.NAME), "description": fm.Key(fm.TEXT, DESCRIPTION_CAP),
    "license": fm.Key(fm.ANY), "allowed-tools": fm.Key(fm.ANY), "metadata": fm.Key(fm.ANY),
    "version": fm.Key(fm.ANY), "model": fm.Key(fm.ANY),
    "disable-model-invocation": fm.Key(fm.ANY), "user-invocable": fm.Key(fm.ANY),
}


@records.frozen
class Skill:
    name: str
    description: str
    path: Path
    root: Path | None = None  # the workspace it was found in (what the file may resolve into)

    def body(self) -> str:
        """The skill's instructions (front matter removed), with its directory named so the
        model can open files the skill refers to. Raises ``OSError`` (``PromptFileRefused``)
        when the file cannot or may not be read."""
        text = read_prompt_file(self.path, prompt_roots(self.root))
        try:
            _meta, body = fm.split_front_matter(text, self.path)
        except fm.FrontMatterError:  # changed since the session started: the text as it is
            body = text
        return f"Skill {self.name} (files in {self.path.parent}):\n\n{body.strip()}\n"


def _load(path: Path, default_name: str, root: Path,
          notes: list[str] | None = None, roots: Iterable[Path] = ()) -> Skill | None:
    try:
        text = read_prompt_file(path, roots or prompt_roots(root))
    except OSError:  # unreadable, or refused (the notice is logged)
        return None
    try:
        fields, body = fm.split_front_matter(text, path)
        meta, warnings = fm.check_fields(fields, SKILL_KEYS, path)
        name = meta.get("name") or fm.check_name(default_name, f"{path}: name")
    except fm.FrontMatterError as exc:
        if notes is not None:
            notes.append(f"skill left out: {exc}")
        return None
    if notes is not None:
        notes.extend(warnings)
    description = " ".join((meta.get("description") or fm.first_prose_line(body)).split())
    return Skill(name, cut(description, DESCRIPTION_CAP, one_line=False, rstrip=True), path, root)


def discover_skills(root: Path, notes: list[str] | None = None) -> list[Skill]:
    """Every skill of the workspace, ``.nyzhi`` first, sorted by name within the result.
    Notices about skill files (left out, unknown keys) are appended to ``notes``."""
    found: dict[str, Skill] = {}
    roots = resolve_roots(prompt_roots(root))  # once, not per skill file
    for rel in SKILL_DIRS:
        base = root / rel
        if not base.is_dir():
            continue
        for entry in sorted(base.iterdir()):
            if entry.is_dir() and (entry / SKILL_FILE).is_file():
                skill = _load(entry / SKILL_FILE, entry.name, root, notes, roots)
            elif entry.is_file() and entry.suffix == ".md" and rel.startswith(".nyzhi"):
                skill = _load(entry, entry.stem, root, notes, roots)  # nyzhi 3.x layout
            else:
                continue
            if skill is not None:
                found.setdefault(skill.name, skill)
    from nyzhi.config.plugins import plugin_dirs

    for plugin, base in plugin_dirs(root, "skills"):  # named plugin:skill, as Claude Code
        for entry in sorted(base.iterdir()):
            if entry.is_dir() and (entry / SKILL_FILE).is_file():
                skill = _load(entry / SKILL_FILE, entry.name, root, notes, roots)
                if skill is not None:
                    named = attrs.evolve(skill, name=f"{plugin}:{skill.name}")
                    found.setdefault(named.name, named)
    return sorted(found.values(), key=lambda s: s.name)


def skills_index(root: Path, notes: list[str] | None = None) -> tuple[tuple[str, str], ...]:
    """(name, description) of every skill: what ``PromptParts.skills`` takes."""
    return tuple((s.name, s.description) for s in discover_skills(root, notes))


def find_skill(root: Path, name: str) -> Skill | None:
    wanted = name.strip().lower()
    return next((s for s in discover_skills(root) if s.name.lower() == wanted), None)
