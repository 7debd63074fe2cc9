"""Trust modes and sandbox levels have one definition (nyzhi.config.modes), used everywhere."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import nyzhi
from nyzhi.cli.main import main
from nyzhi.config import Config, load_config
from nyzhi.config.modes import (
    SandboxLevel,
    TrustMode,
    choices,
    parse_sandbox,
    parse_trust,
)

PACKAGE = Path(nyzhi.__file__).parent
DEFINITION = PACKAGE / "config" / "modes.py"


def test_every_layer_uses_the_same_enums():
    from nyzhi.tools import base, gates, sandbox

    assert base.TrustMode is TrustMode and base.SandboxLevel is SandboxLevel
    assert gates.TrustMode is TrustMode and sandbox.SandboxLevel is SandboxLevel
    assert gates.TrustPolicy.from_config({"mode": "autoedit"}).mode is TrustMode.AUTOEDIT
    assert sandbox.SandboxPolicy("read-only", "/tmp").level is SandboxLevel.READ_ONLY


def test_the_spellings_are_not_written_out_anywhere_else():
    """A second copy of the vocabulary (a tuple of names, a Literal, an alias table) would spell
    these values out as string constants; only the definition may."""
    distinctive = {"autoedit", "workspace-write", "full-access", "read-only"}
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path == DEFINITION:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and node.value in distinctive:
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {node.value!r}")
    assert found == []


def test_config_values_are_the_enums_and_serialise_as_their_names(env):
    env.write(env.project_config, "[agent.trust]\nmode = 'full'\n[agent.sandbox]\nlevel = 'read-only'\n")
    agent = load_config().config.agent
    assert agent.trust.mode is TrustMode.FULL and agent.sandbox.level is SandboxLevel.READ_ONLY
    assert agent.trust.mode == "full" and json.dumps(agent.sandbox.level) == '"read-only"'
    assert Config().agent.trust.mode is TrustMode.OFF
    assert Config().with_overrides(trust="limited").agent.trust.mode is TrustMode.LIMITED


def test_config_rejects_aliases_the_command_line_accepts(env):
    from nyzhi.config import ConfigError

    env.write(env.project_config, "[agent.trust]\nmode = 'auto-edit'\n")
    with pytest.raises(ConfigError, match='expected one of "off", "limited", "autoedit", "full"'):
        load_config()
    assert parse_trust("auto-edit") is TrustMode.AUTOEDIT


@pytest.mark.parametrize(
    ("text", "level"),
    [("readonly", "read-only"), ("workspace", "workspace-write"), ("full", "full-access"),
     ("danger-full-access", "full-access"), ("read-only", "read-only")],
)
def test_sandbox_aliases(text, level):
    assert parse_sandbox(text) == level


def test_choices_are_in_declaration_order():
    assert choices(TrustMode) == ("off", "limited", "autoedit", "full")
    assert choices(SandboxLevel) == ("read-only", "workspace-write", "full-access")


def test_command_line_errors_keep_their_wording(capsys):
    with pytest.raises(SystemExit) as info:
        main(["run", "--trust", "yolo", "hi"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "invalid trust mode 'yolo': expected one of off, limited, autoedit, full" in err
    with pytest.raises(SystemExit):
        main(["run", "--sandbox", "nope", "hi"])
    err = capsys.readouterr().err
    assert "invalid sandbox 'nope': expected read-only, workspace-write or full-access" in err
