"""``[lsp]`` and ``[lsp.NAME]``: strict structuring, and which server a file gets."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nyzhi.config.convert import structure
from nyzhi.config.errors import ConfigError
from nyzhi.config.schema import LspConfig
from nyzhi.core.runtime.lsp.servers import NoServer, choose, language_of, project_root


def lsp(raw: dict) -> LspConfig:
    return structure({"lsp": raw}).lsp


def test_settings_and_server_tables():
    config = lsp({"diagnostics_wait": 2, "idle_timeout": 0,
                  "pyright": {"command": "pylsp"},
                  "vue": {"command": "vls", "languages": ["vue"], "extensions": [".vue"],
                          "root_markers": ["package.json"],
                          "initialization_options": {"a": 1}, "settings": {"x": {"y": 2}}}})
    assert config.diagnostics_wait == 2.0 and config.idle_timeout == 0.0
    assert config.diagnostics_after_edit is True
    assert config.servers["pyright"].command == "pylsp"
    vue = config.servers["vue"]
    assert vue.languages == ("vue",) and vue.extensions == (".vue",)
    assert vue.initialization_options == {"a": 1} and vue.settings == {"x": {"y": 2}}


@pytest.mark.parametrize("raw, where, says", [
    ({"diagnostic_wait": 2}, "lsp.diagnostic_wait", 'did you mean "diagnostics_wait"?'),
    ({"pyright": {"comand": "x"}}, "lsp.pyright.comand", 'did you mean "command"?'),
    ({"pyright": {"args": "--stdio"}}, "lsp.pyright.args", "expected an array"),
    ({"diagnostics_wait": -1}, "lsp.diagnostics_wait", "-1"),
    ({"diagnostics_after_edit": "yes"}, "lsp.diagnostics_after_edit", "a boolean"),
    ({"servers": 3}, "lsp.servers", "a table"),
])
def test_bad_keys_are_named(raw, where, says):
    with pytest.raises(ConfigError) as err:
        lsp(raw)
    text = str(err.value)
    assert where in text and says in text, text


def _bin(tmp_path: Path, *names: str) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in names:
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    return {"PATH": str(bin_dir)}


def test_defaults_in_order_of_preference(tmp_path):
    env = _bin(tmp_path, "pylsp", "pyright-langserver")
    choice = choose("python", LspConfig(), env)
    assert choice.name == "pyright"
    assert choice.argv == (str(tmp_path / "bin" / "pyright-langserver"), "--stdio")
    ts = choose("typescriptreact", LspConfig(), _bin(tmp_path, "typescript-language-server"))
    assert ts.initialization_options == {"tsserver": {"useSyntaxServer": "never"}}


def test_configured_servers_override_and_add(tmp_path):
    env = _bin(tmp_path, "basedpyright-langserver", "pylsp", "vls")
    config = lsp({"pyright": {"command": "pylsp"},
                  "vue": {"command": "vls", "languages": ["vue"], "extensions": [".vue"]}})
    assert choose("python", config, env).argv == (str(tmp_path / "bin" / "pylsp"),)
    assert language_of(Path("App.vue"), config) == "vue"
    assert choose("vue", config, env).name == "vue"
    off = lsp({"pyright": {"enabled": False}})
    with pytest.raises(NoServer, match="no language server for python files"):
        choose("python", off, env)


def test_project_root_is_the_nearest_marker_inside_the_workspace(tmp_path):
    ws = tmp_path / "ws"
    pkg = ws / "libs" / "pkg"
    (pkg / "src").mkdir(parents=True)
    (pkg / "pyproject.toml").write_text("")
    (tmp_path / "pyproject.toml").write_text("")  # above the workspace: never used
    markers = ("pyproject.toml",)
    assert project_root(pkg / "src" / "a.py", markers, ws) == pkg
    assert project_root(ws / "b.py", markers, ws) == ws
    assert project_root(ws / "other" / "c.py", markers, ws) == ws
    assert os.fspath(project_root(ws / "libs" / "d.py", (), ws)) == os.fspath(ws)
