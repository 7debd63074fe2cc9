"""Skills: instructions for one kind of task, loaded only when a task calls for them.

A skill is ``<root>/.nyzhi/skills/NAME/SKILL.md`` or Claude Code's
``<root>/.claude/skills/NAME/SKILL.md``, with front matter ``name`` and ``description``
(nyzhi 3.x's flat ``.nyzhi/skills/NAME.md`` files are read too). Only the index, each skill's
name and description, goes into the system prompt; ``load_skill(name)`` returns the body
when the model decides it needs it. That keeps dozens of skills from costing a token until
one is used. Where both directories define a name, ``.nyzhi`` wins.

Skill files are read through ``nyzhi.config.prompt_files``: one that resolves outside the
workspace (a symlinked ``SKILL.md`` or skill directory) is skipped with a notice.
"""

from __future__ import annotations

from pathlib import Path

from nyzhi import records
from nyzhi.config.prompt_files import prompt_roots, read_prompt_file
from nyzhi.knowledge.frontmatter import first_prose_line, split_front_matter

SKILL_DIRS: tuple[str, ...] = (".nyzhi/skills", ".claude/skills")
SKILL_FILE = "SKILL.md"


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
        _meta, body = split_front_matter(text)
        return f"Skill {self.name} (files in {self.path.parent}):\n\n{body.strip()}\n"


def _load(path: Path, default_name: str, root: Path) -> Skill | None:
    try:
        text = read_prompt_file(path, prompt_roots(root))
    except OSError:  # unreadable, or refused (the notice is logged)
        return None
    meta, body = split_front_matter(text)
    name = (meta.get("name") or default_name).strip()
    description = meta.get("description", "").strip() or first_prose_line(body)
    return Skill(name, description[:300], path, root) if name else None


def discover_skills(root: Path) -> list[Skill]:
    """Every skill of the workspace, ``.nyzhi`` first, sorted by name within the result."""
    found: dict[str, Skill] = {}
    for rel in SKILL_DIRS:
        base = root / rel
        if not base.is_dir():
            continue
        for entry in sorted(base.iterdir()):
            if entry.is_dir() and (entry / SKILL_FILE).is_file():
                skill = _load(entry / SKILL_FILE, entry.name, root)
            elif entry.is_file() and entry.suffix == ".md" and rel.startswith(".nyzhi"):
                skill = _load(entry, entry.stem, root)  # nyzhi 3.x layout
            else:
                continue
            if skill is not None:
                found.setdefault(skill.name, skill)
    return sorted(found.values(), key=lambda s: s.name)


def skills_index(root: Path) -> tuple[tuple[str, str], ...]:
    """(name, description) of every skill: what ``PromptParts.skills`` takes."""
    return tuple((s.name, s.description) for s in discover_skills(root))


def find_skill(root: Path, name: str) -> Skill | None:
    wanted = name.strip().lower()
    return next((s for s in discover_skills(root) if s.name.lower() == wanted), None)
