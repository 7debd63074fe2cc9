"""A Claude Code project of real-world size, generated: for tests and the prompt benchmark.

Users bring workspaces holding public collections of Claude Code files: a hundred and more
agent files, a couple of hundred skills, dozens of commands, a CLAUDE.md that imports others
and a ``.claude/settings.json`` with permission rules. This writes one of that shape from code
(no third-party file is copied): role files whose front-matter ``name`` differs from the file
name, folded (``>``) and literal (``|``) YAML descriptions of several hundred characters,
Claude Code tool lists (``Agent``, ``TaskCreate``, ``NotebookEdit``, …), and long bodies.

``write_claude_project(root)`` returns a ``ClaudeProject`` naming what tests look for.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from nyzhi import records
from nyzhi.tools.claude_names import CLAUDE_TOOLS

N_ROLES = 110
N_SKILLS = 160
N_COMMANDS = 40

_AREAS = ("python-development", "frontend", "backend", "data-engineering", "security",
          "devops", "testing", "documentation", "mobile", "database", "cloud", "ml-ops")
_TOPICS = ("django", "fastapi", "react", "vue", "postgres", "kafka", "terraform", "kubernetes",
           "pytest", "playwright", "graphql", "redis", "spark", "airflow", "rust", "golang",
           "typescript", "accessibility", "performance", "observability", "auth", "payments")
_KINDS = ("pro", "expert", "reviewer", "architect", "migrator", "auditor", "tuner", "writer")
_WORDS = ("analyse", "the", "codebase", "carefully", "and", "propose", "changes", "that",
          "respect", "existing", "conventions", "tests", "coverage", "edge", "cases", "deploy",
          "pipelines", "schemas", "queries", "latency", "budgets", "documentation", "review",
          "refactor", "incrementally", "with", "clear", "commit", "messages", "for", "teams")

# The role the tests spawn by both names, and its prompt's marker.
ROLE_FILE = "django-pro"
ROLE_NAME = "python-development-django-pro"
ROLE_MARKER = "DJANGO-PRO-ROLE-PROMPT"


@records.frozen
class ClaudeProject:
    root: Path
    roles: int
    skills: int
    commands: int
    role_file: str = ROLE_FILE
    role_name: str = ROLE_NAME
    role_marker: str = ROLE_MARKER


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n)).capitalize() + "."


def _paragraphs(rng: random.Random, count: int, words: int = 24) -> str:
    return "\n\n".join(_sentence(rng, words) for _ in range(count))


def _description_yaml(rng: random.Random, text: str, style: int) -> str:
    """``description:`` as a folded, literal or quoted YAML scalar."""
    lines = [text[i:i + 70] for i in range(0, len(text), 70)]
    if style == 0:  # folded: the lines join with spaces
        words = text.split()
        folded, line = [], ""
        for word in words:
            if len(line) + len(word) > 70:
                folded.append(line)
                line = ""
            line = f"{line} {word}".strip()
        folded.append(line)
        return "description: >\n" + "".join(f"  {w}\n" for w in folded)
    if style == 1:  # literal
        return "description: |\n" + "".join(f"  {w.strip()}\n" for w in lines)
    escaped = text.replace('"', '\\"')
    return f'description: "{escaped}"\n'


def _tools(rng: random.Random) -> str:
    names = sorted(CLAUDE_TOOLS)
    picked = rng.sample(names, 6) + ["Read", "Grep", "Agent", "TaskCreate"]
    return ", ".join(dict.fromkeys(picked))


def write_claude_project(root: Path, *, seed: int = 31) -> ClaudeProject:
    """Write the project under ``root`` (created if needed)."""
    rng = random.Random(seed)
    root = Path(root)
    agents = root / ".claude" / "agents"
    skills = root / ".claude" / "skills"
    commands = root / ".claude" / "commands"
    for folder in (agents, skills, commands):
        folder.mkdir(parents=True, exist_ok=True)
    stems: set[str] = {ROLE_FILE}
    while len(stems) < N_ROLES:
        stems.add(f"{rng.choice(_TOPICS)}-{rng.choice(_KINDS)}-{len(stems)}")
    for i, stem in enumerate(sorted(stems)):
        name = ROLE_NAME if stem == ROLE_FILE else f"{_AREAS[i % len(_AREAS)]}-{stem}"
        text = (f"Use this agent for {stem.replace('-', ' ')} work. " + _sentence(rng, 60)
                + " Examples: " + _sentence(rng, 30))
        body = (f"You are {name}. " + (ROLE_MARKER + ". " if stem == ROLE_FILE else "")
                + "\n\n## Focus\n\n" + _paragraphs(rng, 12, 40))
        (agents / f"{stem}.md").write_text(
            f"---\nname: {name}\n{_description_yaml(rng, text, i % 3)}"
            f"tools: {_tools(rng)}\nmodel: inherit\ncolor: blue\n---\n\n{body}\n")
    for i in range(N_SKILLS):
        name = f"{rng.choice(_TOPICS)}-{rng.choice(('guide', 'patterns', 'checklist'))}-{i}"
        text = (f"Skill for {name.replace('-', ' ')}. " + _sentence(rng, 70)
                + " Use when " + _sentence(rng, 20))
        folder = skills / name
        folder.mkdir(exist_ok=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\n{_description_yaml(rng, text, (i + 1) % 3)}"
            f"allowed-tools: Read, Grep, Bash\nlicense: MIT\n---\n\n# {name}\n\n"
            + _paragraphs(rng, 10, 40) + "\n")
    for i in range(N_COMMANDS):
        name = f"{rng.choice(_TOPICS)}-{rng.choice(('audit', 'scaffold', 'review'))}-{i}"
        (commands / f"{name}.md").write_text(
            "---\ndescription: " + _sentence(rng, 12) + "\nargument-hint: <path> [--level]\n"
            "---\n\nRun the check on $ARGUMENTS. " + _paragraphs(rng, 3) + "\n")
    return ClaudeProject(root, N_ROLES, N_SKILLS, N_COMMANDS)


def write_settings(root: Path, permissions: dict[str, list[str]], *,
                   local: bool = False) -> Path:
    """``.claude/settings.json`` (or ``settings.local.json``) with these permission lists."""
    path = Path(root) / ".claude" / ("settings.local.json" if local else "settings.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": permissions}, indent=2) + "\n")
    return path
