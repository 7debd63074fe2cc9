"""Claude Code output styles: how the agent talks, chosen per project.

A style is a Markdown file with front matter ``name``, ``description`` and
``keep-coding-instructions`` (default false), from ``<root>/.claude/output-styles/*.md`` and
active plugins' ``output-styles/*.md`` (``nyzhi.config.plugins``; also reachable as
``plugin:name``). ``outputStyle`` in the project's ``.claude/settings.json`` (the local file
wins) chooses one; ``default`` (or none) keeps nyz's own prompt.

As in Claude Code, a chosen style replaces the prompt's communication section with its own
text, and, unless it keeps the coding instructions, also the sections about how to work on
code (``nyzhi.core.loop.prompt.STYLE_REPLACES``). A style named but not found is a notice.
"""

from __future__ import annotations

from pathlib import Path

from nyzhi import records
from nyzhi.config.prompt_files import prompt_roots, read_prompt_file
from nyzhi.knowledge import frontmatter as fm
from nyzhi.textcut import cut

STYLE_KEYS: dict[str, fm.Key] = {
    "name": fm.Key(fm.TEXT), "description": fm.Key(fm.TEXT),
    "keep-coding-instructions": fm.Key(fm.FLAG),
}
BODY_CAP = 8_000  # characters of a style's text in the prompt


@records.frozen
class OutputStyle:
    name: str
    description: str
    text: str
    keep_coding: bool = False
    source: str = ""


def _load(path: Path, root: Path, notes: list[str]) -> OutputStyle | None:
    try:
        text = read_prompt_file(path, prompt_roots(root))
        fields, body = fm.split_front_matter(text, path)
        meta, warnings = fm.check_fields(fields, STYLE_KEYS, path)
    except OSError:
        return None
    except fm.FrontMatterError as exc:
        notes.append(f"output style left out: {exc}")
        return None
    notes.extend(warnings)
    return OutputStyle(str(meta.get("name") or path.stem), str(meta.get("description") or ""),
                       cut(body.strip(), BODY_CAP, one_line=False, rstrip=True), bool(meta.get("keep-coding-instructions")),
                       str(path))


def discover_styles(root: Path, notes: list[str] | None = None) -> dict[str, OutputStyle]:
    """Every style by name (a plugin's also as ``plugin:name``); the project's win."""
    from nyzhi.config.plugins import plugin_dirs

    notes = notes if notes is not None else []
    found: dict[str, OutputStyle] = {}
    for plugin, folder in plugin_dirs(root, "output-styles"):
        for path in sorted(folder.glob("*.md")):
            style = _load(path, root, notes)
            if style is not None:
                found.setdefault(style.name, style)
                found[f"{plugin}:{style.name}"] = style
    folder = root / ".claude" / "output-styles"
    if folder.is_dir():
        for path in sorted(folder.glob("*.md")):
            style = _load(path, root, notes)
            if style is not None:
                found[style.name] = style
    return found


def chosen_style(root: Path, notes: list[str] | None = None) -> OutputStyle | None:
    """The style the project's ``outputStyle`` names (None for none or ``default``)."""
    from nyzhi.config.claude_settings import read_settings

    name = None
    for settings in read_settings(root)[0]:
        data = settings.data if isinstance(settings.data, dict) else {}
        if isinstance(data.get("outputStyle"), str):
            name = data["outputStyle"].strip()
    if not name or name.lower() == "default":
        return None
    styles = discover_styles(root, notes)
    style = styles.get(name) or next(
        (s for n, s in styles.items() if n.lower() == name.lower()), None)
    if style is None and notes is not None:
        notes.append(f"outputStyle {name!r} (.claude/settings.json): no such output style in "
                     ".claude/output-styles or an installed plugin; nyz's own is used")
    return style
