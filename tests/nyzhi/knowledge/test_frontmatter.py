"""Front matter is YAML, read by one parser for roles, skills, commands and plans: folded and
literal scalars, Claude Code's agent and skill files, bad YAML reported in one line naming the
file (the file left out, nothing crashing), and every field that reaches a prompt capped."""

from __future__ import annotations

from pathlib import Path

import pytest

from nyzhi.core.runtime import roles as r
from nyzhi.knowledge import frontmatter as fm
from nyzhi.knowledge import plans
from nyzhi.knowledge.commands import load_commands
from nyzhi.knowledge.listing import ENTRY_CHARS
from nyzhi.knowledge.skills import DESCRIPTION_CAP, discover_skills, skills_index
from nyzhi.testing.cli import run_nyz as nyz
from nyzhi.testing.fake_llm import open_fake_llm, reply


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# ---- YAML as real files write it ------------------------------------------------------------

BLOCK_SCALARS = """---
name: scalars
folded: >
  Reviews the API
  layer for errors.

  Second paragraph.
folded_strip: >-
  one
  line
literal: |
  first line
    indented line
  last line
literal_strip: |-
  kept
  as is
quoted: "tab\\tand \\u00e9"
single: 'it''s'
plain: Use it when: the build fails
flags: [true, false, yes, no, on, off]
count: 12
inline: [a, "b, c"]
block:
  - x
  - y
empty:
---
Body text.
"""


def test_folded_literal_and_other_scalars():
    fields, body = fm.split_front_matter(BLOCK_SCALARS, "s.md")
    assert fields["folded"] == "Reviews the API layer for errors.\nSecond paragraph.\n"
    assert fields["folded_strip"] == "one line"
    assert fields["literal"] == "first line\n  indented line\nlast line\n"
    assert fields["literal_strip"] == "kept\nas is"
    assert fields["quoted"] == "tab\tand é" and fields["single"] == "it's"
    assert fields["plain"] == "Use it when: the build fails"  # re-read with the value quoted
    # YAML 1.2 booleans: yes/no/on/off stay the words they are
    assert fields["flags"] == [True, False, "yes", "no", "on", "off"]
    assert fields["count"] == 12 and fields["inline"] == ["a", "b, c"]
    assert fields["block"] == ["x", "y"] and fields["empty"] is None
    assert body == "Body text."


def test_no_front_matter_bom_crlf_and_empty_block():
    assert fm.split_front_matter("just a prompt\n") == ({}, "just a prompt")
    assert fm.split_front_matter("\ufeff---\r\nname: x\r\n---\r\nbody\r\n") == ({"name": "x"}, "body")
    assert fm.split_front_matter("---\n---\nbody") == ({}, "body")
    assert fm.split_front_matter("---\n# only a comment\n...\nbody") == ({}, "body")


CLAUDE_AGENT = """---
name: python-development-django-pro
description: >
  Master Django 5.x with async views, DRF, Celery, and Django Channels.
  Use PROACTIVELY for Django development.
tools: Read, Write, Edit, Bash, Grep, Glob
model: sonnet
color: green
---
You are a Django expert.
"""

CLAUDE_AGENT_LIST = """---
name: code-reviewer
description: |
  Reviews code.
  Examples: <example>Context: a PR</example>
tools:
  - Read
  - MultiEdit
  - LS
model: inherit
color: "#ff0000"
permissionMode: default
---
You review code.
"""


def test_claude_code_agent_files_with_folded_descriptions_and_both_tool_forms(tmp_path):
    role, warnings = r.load_role_file(write(tmp_path / "django-pro.md", CLAUDE_AGENT))
    assert role.name == "python-development-django-pro"
    assert role.description == ("Master Django 5.x with async views, DRF, Celery, and Django "
                                "Channels. Use PROACTIVELY for Django development.")
    assert role.allowed_tools == ("read", "write", "edit", "bash", "grep", "glob")
    assert role.model == "sonnet" and role.system_prompt == "You are a Django expert."
    assert warnings == []

    path = write(tmp_path / "reviewer.md", CLAUDE_AGENT_LIST)
    role, warnings = r.load_role_file(path)
    assert role.description == "Reviews code.\nExamples: <example>Context: a PR</example>"
    assert role.allowed_tools == ("read", "multi_edit", "list_dir") and role.model is None
    [warning] = warnings  # one line naming the file and the key
    assert str(path) in warning and "'permissionMode'" in warning and "\n" not in warning


CLAUDE_SKILL = """---
name: pdf
description: >-
  Comprehensive PDF manipulation toolkit for extracting text and tables,
  creating new PDFs, and filling forms.
license: Proprietary. LICENSE.txt has complete terms
allowed-tools: [Bash, Read]
metadata:
  version: "1.0"
---
# PDF

Use pypdf.
"""


def test_claude_code_skill_and_command_files(tmp_path):
    write(tmp_path / ".claude/skills/pdf/SKILL.md", CLAUDE_SKILL)
    write(tmp_path / ".claude/skills/lit/SKILL.md",
          "---\ndescription: |\n  Line one.\n  Line two.\n---\nbody\n")
    notes: list[str] = []
    assert skills_index(tmp_path, notes) == (
        ("lit", "Line one. Line two."),  # the index is one line per skill
        ("pdf", "Comprehensive PDF manipulation toolkit for extracting text and tables, "
                "creating new PDFs, and filling forms."),
    )
    assert notes == []
    write(tmp_path / ".claude/commands/audit.md", """---
description: >
  Audit a component
  for accessibility.
argument-hint: <file> [--level AA]
allowed-tools: Read, Grep
---
Audit $ARGUMENTS.
""")
    commands = load_commands(tmp_path, (), notes)
    assert commands["audit"].description == "Audit a component for accessibility."
    assert commands["audit"].render("src/Button.tsx") == "Audit src/Button.tsx."
    assert notes == []


# ---- bad YAML: one line naming the file, the file left out, nothing crashes -----------------

BAD_BLOCKS = [
    ("---\nname: \"unclosed\n---\nbody\n", "line 2:"),
    ("---\nname: a\n\tdescription: tab\n---\nbody\n", "line 3:"),
    ("---\nname: a\nname: b\n---\nbody\n", "key 'name' appears twice"),
    ("---\n- a\n- b\n---\nbody\n", "found list"),
    ("---\njust words\n---\nbody\n", "found str"),
    ("---\nname: x\nno closing line\n", "never closed"),
    ("---\nx: " + "[" * 5000 + "]" * 5000 + "\n---\nbody\n", "line 2:"),
    ("---\nx:\n" + "".join(" " * i + "- \n" for i in range(3000)) + "---\nbody\n", "YAML"),
    ("---\nname: \"a\x7fb\"\n---\nbody\n", "control characters are not allowed"),
    ("---\nname: !!python/object:os.system x\n---\nbody\n", "could not determine a constructor"),
    ("---\n{\x00\x01: [\n---\nbody\n", "not valid YAML"),
    ("---\ndescription: [a, b]\n---\nbody\n", "description: expected a string, found ['a', 'b']"),
]


@pytest.mark.parametrize(("text", "needle"), BAD_BLOCKS)
def test_bad_front_matter_is_one_line_naming_the_file_and_the_file_is_left_out(
    tmp_path, text, needle
):
    skill = write(tmp_path / ".nyzhi/skills/bad/SKILL.md", text)
    write(tmp_path / ".nyzhi/skills/good/SKILL.md", "---\nname: good\n---\nGood skill.\n")
    command = write(tmp_path / ".nyzhi/commands/bad.md", text)
    role = write(tmp_path / ".nyzhi/agents/bad.md", text)
    notes: list[str] = []
    assert [s.name for s in discover_skills(tmp_path, notes)] == ["good"]
    assert "bad" not in load_commands(tmp_path, (), notes)
    catalog = r.RoleCatalog.load(None, tmp_path)
    notes.append(catalog.errors["bad"])
    for note, path in zip(notes, (skill, command, role), strict=True):
        assert str(path) in note and needle in note and "\n" not in note, note
        assert len(note) < 600  # the offending value is shown short


def test_aliases_cannot_blow_up_an_error_message(tmp_path):
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    path = write(tmp_path / "r.md", f"---\n{laughs}description: *i\n---\nbody\n")
    with pytest.raises(r.RoleError) as err:
        r.load_role_file(path)
    assert "description: expected a string" in str(err.value) and len(str(err.value)) < 600


# ---- caps on what reaches a prompt ---------------------------------------------------------


def test_names_over_the_cap_are_refused_and_texts_are_cut(tmp_path):
    long_name = "n" * 100_000
    write(tmp_path / ".nyzhi/skills/huge/SKILL.md", f"---\nname: {long_name}\n---\nbody\n")
    write(tmp_path / ".nyzhi/skills/multi/SKILL.md", "---\nname: \"a\\nb\"\n---\nbody\n")
    write(tmp_path / (".nyzhi/skills/" + "d" * 200 + "/SKILL.md"), "no front matter\n")
    write(tmp_path / ".nyzhi/skills/wordy/SKILL.md",
          f"---\ndescription: {'word ' * 50_000}\n---\nbody\n")
    notes: list[str] = []
    [skill] = discover_skills(tmp_path, notes)
    assert skill.name == "wordy" and len(skill.description) == DESCRIPTION_CAP
    assert len(notes) == 3 and all("at most 64 characters" in n for n in notes)
    assert all(len(n) < 600 for n in notes)

    write(tmp_path / (".nyzhi/commands/" + "c" * 65 + ".md"), "a command\n")
    write(tmp_path / ".nyzhi/commands/big.md", f"---\ndescription: {'x' * 100_000}\n---\nok\n")
    notes = []
    commands = load_commands(tmp_path, (), notes)
    assert list(commands) == ["big"] and len(commands["big"].description) == fm.TEXT_CAP
    assert len(notes) == 1 and "at most 64 characters" in notes[0]

    for text, needle in (
        (f"---\nname: {long_name}\n---\nbody\n", "name: expected a name of one line"),
        (f"---\nname: r\ndescription: {'y' * 100_000}\ntools: [{'t' * 200}]\n---\nb\n",
         "tools: expected a list of names"),
        (f"---\nname: r\nmodel: {'m' * 1000}\n---\nbody\n", "at most 128 characters"),
    ):
        with pytest.raises(r.RoleError) as err:
            r.load_role_file(write(tmp_path / "role.md", text))
        assert needle in str(err.value) and len(str(err.value)) < 600
    role, _ = r.load_role_file(
        write(tmp_path / "role.md", f"---\nname: r\ndescription: {'y' * 100_000}\n---\nbody\n"))
    assert len(role.description) == fm.TEXT_CAP


async def test_nyz_run_with_bad_and_oversized_files_sends_only_capped_text(
    workspace, home, configure
):
    long_name = "x" * 100_000
    write(workspace / ".claude/skills/huge/SKILL.md", f"---\nname: {long_name}\n---\nhuge\n")
    write(workspace / ".claude/skills/broken/SKILL.md", "---\nname: \"broken\n---\nbody\n")
    write(workspace / ".claude/skills/big/SKILL.md",
          f"---\nname: big\ndescription: >\n  {'Z' * 100_000}\n---\nbody\n")
    write(workspace / ".claude/skills/pdf/SKILL.md", CLAUDE_SKILL)
    write(workspace / ".claude/commands/oops.md", "---\n: : :\n---\nbody\n")
    write(workspace / ".claude/agents/django-pro.md", CLAUDE_AGENT)
    write(workspace / ".claude/agents/huge.md",
          f"---\nname: huge\ndescription: {'D' * 100_000}\n---\nbody\n")
    async with open_fake_llm(script=[reply("done")]) as server:
        configure(workspace, server.url_for("openai"))
        proc = await nyz(workspace, home, "run", "hello")
    stderr = proc.stderr.decode()
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr
    for name in ("huge/SKILL.md", "broken/SKILL.md", "oops.md"):
        [line] = [ln for ln in stderr.splitlines() if name in ln]
        assert len(line) < 600
    [request] = server.requests
    system = "\n".join(text for role, text in request.transcript() if role == "system")
    assert long_name[:100] not in system and "Z" * (DESCRIPTION_CAP + 1) not in system
    assert "pdf: Comprehensive PDF manipulation toolkit" in system
    spawn = next(t["function"]["description"] for t in request.json["tools"]
                 if t["function"]["name"] == "spawn_agent")
    assert "python-development-django-pro: Master Django 5.x with async views" in spawn
    # the role list cuts each description to a short one (issue 31: listing budgets)
    assert "D" * (ENTRY_CHARS + 1) not in spawn and "D" * (ENTRY_CHARS - 1) in spawn


# ---- plans -----------------------------------------------------------------------------------

AWKWARD = ["a: b # c", "x\x7fy\x85z\u2028w\u2029v\x01\x9f", "emoji 😀 é", "'q' \"dq\" \\",
           "  lead", "line1\nline2", "", "yes", "null", "- dash", "---", "\ufffe"]


@pytest.mark.parametrize("value", AWKWARD)
def test_plans_written_by_the_tool_read_back_exactly(tmp_path, value):
    path = tmp_path / "s.plan.md"
    todos = [{"id": "1", "content": value, "status": "pending"}]
    path.write_text(plans.render_plan(value, value, "The plan.", todos), encoding="utf-8")
    meta, body = plans.read_plan(path)
    assert (meta["name"], meta["overview"], meta["todos"], body) == (
        value, value, todos, "The plan.")


def test_hand_edited_plans_read_as_yaml_and_broken_ones_give_no_fields(tmp_path):
    path = write(tmp_path / "s.plan.md", """---
name: Ship v2
overview: >
  Two steps,
  then release.
todos:
  - {id: "1", content: tag it, status: pending}
  - not a todo
---
Steps.
""")
    meta, body = plans.read_plan(path)
    assert meta["overview"] == "Two steps, then release.\n" and body == "Steps."
    assert meta["todos"] == [{"id": "1", "content": "tag it", "status": "pending"}]
    write(path, "---\nname: [unclosed\n---\nStill the body.\n")
    assert plans.read_plan(path) == ({"todos": []}, "Still the body.")
