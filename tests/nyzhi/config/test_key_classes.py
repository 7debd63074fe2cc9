"""Issue 49, item 1: every key of the config schema has a class (``nyzhi.config.key_classes``),
found by walking the attrs classes themselves, so a key added without one fails here; and the
project-layer split applies the classes (SAFE kept, tightening kept, the rest gated).
"""

from __future__ import annotations

import ast
import math
import re
import types
import typing
from pathlib import Path

import attrs
import pytest

from nyzhi.config import key_classes as kc
from nyzhi.config.key_classes import KEYS, KeyClass, class_of
from nyzhi.config.keys import schema_keys
from nyzhi.config.project_trust import split_layer
from nyzhi.config.schema import Config, LspConfig, NotifyConfig, ProviderSection

SECURITY = Path(__file__).resolve().parents[3] / "docs" / "security.md"


def attrs_keys(cls: type, at: tuple = ()) -> typing.Iterator[str]:
    """Every key under ``cls``, read from the attrs fields and their type hints (a dict's keys
    are ``NAME``; an array's entries are keys of their own class; a union: each member's)."""
    hints = typing.get_type_hints(cls)
    for field in attrs.fields(cls):
        hint = hints[field.name]
        if (cls, field.name) in ((ProviderSection, "entries"), (LspConfig, "servers")):
            # [provider.NAME] and [lsp.NAME] sit beside the section's own keys
            yield from _keys_of(hint, at)
            continue
        here = (*at, field.name)
        yield ".".join(here)
        yield from _keys_of(hint, here)


def _keys_of(t: typing.Any, at: tuple) -> typing.Iterator[str]:
    origin, args = typing.get_origin(t), typing.get_args(t)
    if attrs.has(t):
        yield from attrs_keys(t, at)
    elif origin in (typing.Union, types.UnionType):
        for arg in args:
            yield from _keys_of(arg, at)
    elif origin is tuple and args and args[-1] is Ellipsis:
        yield from _keys_of(args[0], at)
    elif origin is dict and attrs.has(_bare(args[1])):
        yield ".".join((*at, "NAME"))
        yield from _keys_of(args[1], (*at, "NAME"))


def _bare(t: typing.Any) -> typing.Any:
    args = [a for a in typing.get_args(t) if a is not type(None)] or [t]
    return args[0]


def unclassified(root: type = Config) -> list[str]:
    """The leaf keys under ``root`` that no table entry classifies (a table counts through
    its keys)."""
    keys = set(attrs_keys(root))
    tables = {k.rsplit(".", 1)[0] for k in keys if "." in k}
    return sorted(k for k in keys if k not in tables and class_of(k) is None)


def test_the_attrs_walk_sees_every_schema_key():
    # the walk above and the loader's own (keys.schema_keys) agree, so neither misses a key
    assert set(attrs_keys(Config)) == set(schema_keys())


def test_every_key_of_the_schema_has_a_class():
    assert unclassified() == []


@attrs.frozen
class ProbeNotify(NotifyConfig):
    probe_url: str | None = None


@attrs.frozen
class ProbeConfig(Config):
    notify: ProbeNotify = attrs.Factory(ProbeNotify)


def test_a_new_key_without_a_class_fails_the_walk():
    """The negative probe: a schema with one more key under [notify] is caught."""
    assert unclassified(ProbeConfig) == ["notify.probe_url"]


def test_every_table_entry_is_a_schema_key_and_safe_ones_are_leaves():
    keys = set(schema_keys())
    assert sorted(set(KEYS) - keys) == []
    tables = {k.rsplit(".", 1)[0] for k in keys if "." in k}
    # a SAFE table would make a key added under it later safe by accident
    assert [k for k, e in KEYS.items() if e.cls is KeyClass.SAFE and k in tables] == []


def test_the_defaults_a_limit_assumes_are_the_schemas():
    """A limit's ``unset`` (what an unset user value means) must be the schema default."""
    config = Config()
    for key, entry in KEYS.items():
        unset = getattr(entry.safe, "unset", None)
        if unset is None or unset == math.inf or "NAME" in key:
            continue
        value: typing.Any = config
        for part in key.split("."):
            value = getattr(value, part)
        assert value == unset, key


def test_an_unclassified_schema_key_is_gated_not_applied(monkeypatch):
    """Default deny at run time too: a schema key the table lost is gated."""
    from nyzhi.config import project_trust

    real = project_trust.entry_for
    monkeypatch.setattr(project_trust, "entry_for",
                        lambda form: None if form == ("notify", "bell") else real(form))
    split = split_layer({"notify": {"bell": False, "osc": "9"}}, None, Path("/tmp"))
    assert split.kept == {"notify": {"osc": "9"}} and "notify.bell" in split.gated


WS = Path("/tmp/ws-for-paths")


@pytest.mark.parametrize(("raw", "user", "gated"), [
    # the vectors, and more of each class
    ({"shell": {"env": {"set": {"PATH": "bin:/usr/bin"}}}}, None, "shell.env"),
    ({"shell": {"env": {"exclude": []}}}, None, "shell.env"),
    ({"browser": {"executable": "./tools/chrome"}}, None, "browser.executable"),
    ({"browser": {"executable_path": "./tools/chrome"}}, None, "browser.executable_path"),
    ({"provider": {"openai": {"base_url": "http://evil"}}}, None, "provider.openai.base_url"),
    ({"provider": {"openai": {"headers": {"X": "y"}}}}, None, "provider.openai.headers"),
    ({"provider": {"openai": {"env_var": "GITHUB_TOKEN"}}}, None, "provider.openai.env_var"),
    ({"provider": {"x": {"oauth": {"device_authorization_url": "http://e", "token_url": "t",
                                   "client_id": "c"}}}}, None, "provider.x.oauth"),
    ({"web_search": {"url": "http://evil"}}, None, "web_search.url"),
    ({"web_search": {"backend": "brave"}}, None, "web_search.backend"),
    ({"notify": {"webhook_url": "http://evil"}}, None, "notify.webhook_url"),
    ({"index": {"embedding": "openai"}}, None, "index.embedding"),
    ({"agent": {"hooks": [{"event": "after_turn", "command": "x"}]}}, None, "agent.hooks"),
    ({"agent": {"verify": {"checks": [{"kind": "test", "command": "x"}]}}}, None,
     "agent.verify"),
    ({"agent": {"format_on_edit": "auto"}}, None, "agent.format_on_edit"),
    ({"mcp": {"servers": {"x": {"command": "sh"}}}}, None, "mcp.servers"),
    ({"lsp": {"pyright": {"command": "./evil"}}}, None, "lsp.pyright"),
    ({"nodes": [{"name": "n", "host": "h"}]}, None, "nodes"),
    ({"shell": {"path": "./sh"}}, None, "shell.path"),
    ({"shell": {"startup_commands": ["x"]}}, None, "shell.startup_commands"),
    ({"agent": {"sandbox": {"level": "full-access"}}}, None, "agent.sandbox.level"),
    ({"agent": {"sandbox": {"network": True}}}, None, "agent.sandbox.network"),
    ({"agent": {"sandbox": {"fallback": "unsandboxed"}}}, None, "agent.sandbox.fallback"),
    ({"agent": {"sandbox": {"writable_roots": ["../.."]}}}, None,
     "agent.sandbox.writable_roots"),
    ({"agent": {"sandbox": {"writable_roots": ["/etc"]}}}, None,
     "agent.sandbox.writable_roots"),
    ({"agent": {"trust": {"mode": "limited"}}}, None, "agent.trust.mode"),
    ({"agent": {"trust": {"mode": "full"}}}, {"agent": {"trust": {"mode": "autoedit"}}},
     "agent.trust.mode"),
    ({"agent": {"trust": {"allow_paths": ["/"]}}}, None, "agent.trust.allow_paths"),
    ({"agent": {"max_steps": 101}}, None, "agent.max_steps"),
    ({"agent": {"max_steps": 20}}, {"agent": {"max_steps": 10}}, "agent.max_steps"),
    ({"agent": {"stale_write_guard": False}}, None, "agent.stale_write_guard"),
    ({"agent": {"agents": {"budget": {"usd": 5}}}}, {"agent": {"agents": {"budget": {
        "usd": 1}}}}, "agent.agents.budget.usd"),
    ({"agent": {"agents": {"roles": {"r": {"read_only": False}}}}}, None,
     "agent.agents.roles.r.read_only"),
    ({"agent": {"agents": {"roles": {"r": {"config_file": "../../etc/role.md"}}}}}, None,
     "agent.agents.roles.r.config_file"),
    ({"agent": {"agents": {"roles": {"r": {"description": "mine now"}}}}},
     {"agent": {"agents": {"roles": {"r": {"read_only": True}}}}}, "agent.agents.roles.r"),
    ({"team": {"max_concurrent_model_calls": 0}}, None, "team.max_concurrent_model_calls"),
    ({"lsp": {"enabled": True}}, {"lsp": {"enabled": False}}, "lsp.enabled"),
])
def test_gated_keys_are_held_back(raw, user, gated):
    split = split_layer(raw, user, WS)
    assert gated in split.gated, split.gated
    node = split.kept
    for part in gated.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    assert node is None, split.kept


@pytest.mark.parametrize(("raw", "user"), [
    ({"tui": {"theme": "light", "show_thinking": False}}, None),
    ({"provider": {"default": "openai", "openai": {"model": "gpt-x", "temperature": 0.1}}},
     None),
    ({"agent": {"max_steps": 5, "custom_instructions": "be brief"}}, None),
    ({"agent": {"max_steps": 10}}, {"agent": {"max_steps": 20}}),
    ({"agent": {"sandbox": {"level": "read-only", "hide": ["~/.vault"]}}}, None),
    ({"agent": {"sandbox": {"level": "workspace-write"}}}, None),
    ({"agent": {"sandbox": {"writable_roots": ["build", "out/x"]}}}, None),
    ({"agent": {"trust": {"mode": "off", "deny_tools": ["bash"], "always_ask": ["write"]}}},
     None),
    ({"agent": {"trust": {"mode": "limited"}}}, {"agent": {"trust": {"mode": "full"}}}),
    ({"agent": {"stale_write_guard": True, "format_on_edit": "off"}}, None),
    ({"agent": {"agents": {"roles": {"r": {"read_only": True, "description": "d",
                                           "config_file": ".nyzhi/agents/r.md"}}}}}, None),
    ({"agent": {"commands": [{"name": "c", "prompt": "p"}]}}, None),
    ({"notify": {"after": "5s", "bell": False}, "lsp": {"diagnostics_wait": 2.0}}, None),
    ({"index": {"embedding": "local", "exclude": ["vendor"]}}, None),
    ({"team": {"max_concurrent_model_calls": 4}}, None),
])
def test_safe_keys_and_tightening_values_apply(raw, user):
    split = split_layer(raw, user, WS)
    assert split.gated == {} and split.kept == raw


def test_user_only_keys_never_apply_even_approved():
    split = split_layer({"agent": {"trust": {"approve_project_config": True}}}, None, WS)
    assert split.user_only == ("agent.trust.approve_project_config",)
    assert split.kept == split.approved == {"agent": {"trust": {}}}


def test_the_claude_keys_map_onto_schema_keys():
    for key in (*kc.CLAUDE_KEYS.values(), *kc.MCP_JSON_KEYS.values()):
        assert class_of(key) is not None, key
    assert class_of(kc.CLAUDE_KEYS["hooks"]) is KeyClass.RUNS_PROGRAM
    assert class_of(kc.CLAUDE_KEYS["permissions.allow"]) is KeyClass.LOOSENS_LIMIT
    assert class_of(kc.CLAUDE_KEYS["permissions.deny"]) is KeyClass.SAFE


def test_security_docs_list_the_allowlist_and_the_classes():
    text = SECURITY.read_text()
    section = text.split("## Project configuration: an allowlist", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`([a-z_]+(?:\.[A-Za-z_]+)+)`", section))
    assert sorted(set(kc.safe_keys()) - listed) == []
    assert sorted(set(kc.tightening_keys()) - listed) == []
    for cls in KeyClass:
        assert cls.name in section, cls.name


# Who may load the configuration without the project-trust filter: only to display it, to
# approve it, or for a path (never to act on its values).
RAW_LOADERS = {
    "config/project_trust.py": "the filter itself",
    "cli/cmd_config.py": "nyz config show / get / trust: display and approval",
    "cli/cmd_mcp.py": "the workspace's paths (add / remove)",
}


# Where ``load_config`` is defined and exported (not a use of it).
LOADER_ITSELF = {"config/loader.py", "config/__init__.py"}


def _raw_loads(rel: str, tree: ast.AST) -> list[str]:
    """Every mention of ``load_config`` in a module: called, passed as a value (to
    ``trio.to_thread.run_sync``, as the console once did, loading the project's unapproved
    keys), imported or reached as an attribute."""
    found = []
    for node in ast.walk(tree):
        named = (isinstance(node, ast.Name) and node.id == "load_config"
                 or isinstance(node, ast.Attribute) and node.attr == "load_config"
                 or isinstance(node, ast.alias) and node.name == "load_config")
        if named:
            found.append(f"{rel}:{getattr(node, 'lineno', '?')}")
    return found


def test_everything_that_acts_on_the_config_loads_it_through_the_filter():
    """By construction: a new front end or command that loads the config to act on it gets
    the trusted view (``load_trusted``), or this test names it."""
    package = Path(__file__).resolve().parents[3] / "nyzhi"
    found = []
    for path in package.rglob("*.py"):
        rel = str(path.relative_to(package))
        if rel not in RAW_LOADERS and rel not in LOADER_ITSELF:
            found += _raw_loads(rel, ast.parse(path.read_text(), rel))
    assert found == []


def test_the_raw_load_check_sees_a_call_a_value_an_import_and_an_attribute():
    """The probes: each way a module could load the raw config is named."""
    for source in ("load_config(cwd)",
                   "trio.to_thread.run_sync(load_config, cwd)",
                   "from nyzhi.config import load_config as raw",
                   "import nyzhi.config\nnyzhi.config.load_config(cwd)",
                   "run(loader.load_config)"):
        assert _raw_loads("probe.py", ast.parse(source)), source
    assert _raw_loads("probe.py", ast.parse("load_trusted(cwd)")) == []


def test_a_new_gated_key_in_the_table_is_enforced_by_both_walkers(monkeypatch, tmp_path):
    """One rule (``project_trust.gating``) for the project's TOML layers and for what nyz
    reads of ``.claude/settings*.json``: a key the table gates is gated in both, with the
    same class, and a key the table lost is gated in both (default deny)."""
    import json

    from nyzhi.config import project_trust as pt

    new = kc.Entry(KeyClass.RUNS_PROGRAM, why="a test's new key")
    monkeypatch.setitem(kc._PARTS, ("notify", "bell"), ("notify.bell", new))  # was SAFE
    monkeypatch.setitem(kc.CLAUDE_KEYS, "env", "notify.bell")
    split = split_layer({"notify": {"bell": False, "osc": "9"}}, None, tmp_path)
    assert split.gated == {"notify.bell": (KeyClass.RUNS_PROGRAM, False)}
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(
        {"env": {"PATH": "bin"}, "permissions": {"deny": ["Bash"]}}))
    assert pt._claude_gated(tmp_path) == {
        ".claude/settings.json": {"env": (KeyClass.RUNS_PROGRAM, {"PATH": "bin"})}}
    # the table loses permissions.deny's schema key: gated from Claude's file too
    real = pt.entry_for
    monkeypatch.setattr(pt, "entry_for",
                        lambda form: None if form == ("agent", "trust", "deny_tools")
                        else real(form))
    got = pt._claude_gated(tmp_path)[".claude/settings.json"]
    assert got["permissions.deny"] == (KeyClass.LOOSENS_LIMIT, ["Bash"])
    assert split_layer({"agent": {"trust": {"deny_tools": ["bash"]}}}, None, tmp_path).gated


def test_the_loader_drops_the_user_only_tables_the_table_names():
    """The loader's project-layer drop (``[network]``) is derived from the table: a new
    table whose every key is USER_ONLY is dropped whole without a second list."""
    from nyzhi.config import loader

    assert kc.USER_ONLY_TABLES == ("network",) and loader.USER_ONLY == kc.USER_ONLY_TABLES
    more = {**KEYS, "tunnel.hosts": kc.Entry(KeyClass.USER_ONLY, why="a test's new table"),
            "tunnel.port": kc.Entry(KeyClass.USER_ONLY, why="a test's new table")}
    assert kc.user_only_tables(more) == ("network", "tunnel")
    mixed = {**more, "tunnel.name": kc.Entry(KeyClass.SAFE)}
    assert kc.user_only_tables(mixed) == ("network",)  # a table with a SAFE key: per key
