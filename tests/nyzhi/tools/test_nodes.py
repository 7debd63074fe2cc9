"""[[nodes]] as a user configures them: ``mode = "monitored"`` builds the read-only executor,
a mistyped node name runs on the closest configured one and says so, and the ``nodes`` tool
lists each node with its mode and whether it answers (a real sshd on loopback)."""

from __future__ import annotations

from pathlib import Path

import _sshd
import pytest
from _toolctx import make_ctx

from nyzhi.config.schema import Config, NodeConfig
from nyzhi.core.runtime.assembly import build_nodes
from nyzhi.tools.builtin.bash import BashTool
from nyzhi.tools.builtin.nodes import NodesTool
from nyzhi.tools.executors import MonitoredExecutor, SshExecutor
from nyzhi.tools.nodes import NodeError, resolve_node


def test_a_typo_is_matched_to_the_closest_node_and_an_unclear_name_is_refused() -> None:
    nodes = {"build1": "b1", "gpu-box": "g", "Deploy": "d"}
    found = resolve_node(nodes, "buidl1")
    assert (found.name, found.executor) == ("build1", "b1")
    assert "'buidl1' is not configured; ran on 'build1'" in found.note
    assert resolve_node(nodes, "deploy").name == "Deploy"  # case
    assert resolve_node(nodes, "build1").note == ""
    for bad in ("mars", "build", ""):
        with pytest.raises(NodeError):
            resolve_node({"build1": 1, "build2": 2} if bad == "build" else nodes, bad)
    with pytest.raises(NodeError, match="no nodes are configured"):
        resolve_node({}, "x")


def test_mode_monitored_builds_the_read_only_executor() -> None:
    config = Config(nodes=(NodeConfig("watch", "h1", mode="monitored"), NodeConfig("work", "h2")))
    nodes = build_nodes(config)
    assert isinstance(nodes["watch"], MonitoredExecutor) and nodes["watch"].monitored
    assert isinstance(nodes["watch"].inner, SshExecutor) and nodes["watch"].inner.host == "h1"
    assert isinstance(nodes["work"], SshExecutor)


def test_mode_is_read_from_the_config_file_and_a_wrong_one_is_one_line(tmp_path: Path) -> None:
    from nyzhi.config.errors import ConfigError
    from nyzhi.config.loader import read_layer, validate_layer

    path = tmp_path / "config.toml"
    path.write_text('[[nodes]]\nname = "w"\nhost = "h"\nmode = "monitored"\n')
    assert validate_layer(read_layer(path), path).nodes[0].mode == "monitored"
    path.write_text('[[nodes]]\nname = "w"\nhost = "h"\nmode = "watched"\n')
    with pytest.raises(ConfigError) as err:
        validate_layer(read_layer(path), path)
    said = str(err.value).strip()
    assert "mode" in said and "watched" in said and str(path) in said and "\n" not in said


ssh = pytest.mark.skipif(_sshd.unavailable_reason() is not None,
                         reason=str(_sshd.unavailable_reason()))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = _sshd.start(tmp_path_factory.mktemp("sshd"))
    yield srv
    _sshd.stop(srv)


def _node(server, *, port=None) -> SshExecutor:
    return SshExecutor(host="127.0.0.1", user=server.user, port=port or server.port,
                       identity_file=server.identity_file, known_hosts=server.known_hosts,
                       connect_timeout=3)


@ssh
async def test_bash_on_a_mistyped_node_runs_there_and_says_so(server, tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, sandbox=False)
    ctx.nodes = {"build1": _node(server)}
    res = await BashTool().run({"command": "echo remote-$((6*7))", "node": "buidl1"}, ctx)
    assert not res.is_error, res.output
    assert res.metadata["node"] == "build1"
    assert res.output.splitlines()[0].startswith("[node 'buidl1' is not configured; ran on ")
    assert "remote-42" in res.output


@ssh
async def test_a_monitored_node_refuses_a_mutating_command(server, tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, sandbox=False)
    ctx.nodes = {"watch": MonitoredExecutor(_node(server))}
    target = tmp_path / "made"
    res = await BashTool().run({"command": f"touch {target}", "node": "watch"}, ctx)
    assert res.is_error and "monitored" in res.output and not target.exists()
    ok = await BashTool().run({"command": f"ls {tmp_path}", "node": "watch"}, ctx)
    assert not ok.is_error, ok.output


@ssh
async def test_the_nodes_tool_lists_mode_and_whether_each_answers(server, tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, sandbox=False)
    dead = _sshd._free_port()  # nothing listens there
    ctx.nodes = {"build1": _node(server), "watch": MonitoredExecutor(_node(server)),
                 "gone": _node(server, port=dead)}
    res = await NodesTool().run({}, ctx)
    assert not res.is_error, res.output
    lines = res.output.splitlines()
    assert lines[0].startswith(f"- build1: {server.user}@127.0.0.1:{server.port}, managed, answers")
    assert lines[1].startswith(f"- gone: {server.user}@127.0.0.1:{dead}, managed, ")
    assert "answers (" not in lines[1]
    assert lines[2].startswith("- watch: ") and ", monitored, answers" in lines[2]
    assert res.metadata["nodes"]["gone"] == {"mode": "managed", "answers": False}
    one = await NodesTool().run({"name": "wacth"}, ctx)
    assert one.output.startswith("- watch: ") and len(one.output.splitlines()) == 1


async def test_the_nodes_tool_is_offered_only_with_nodes(tmp_path: Path) -> None:
    from nyzhi.config.workspace import detect_workspace
    from nyzhi.core.runtime.assembly import build_tooling
    from nyzhi.core.runtime.runtime import RuntimeOptions

    options = RuntimeOptions(cwd=tmp_path, interactive=False)
    workspace = detect_workspace(tmp_path)
    without = build_tooling(Config(), workspace, options, broker=None)
    assert "nodes" not in without.registry.names()
    with_nodes = build_tooling(Config(nodes=(NodeConfig("b", "h"),)), workspace, options,
                               broker=None)
    assert "nodes" in with_nodes.registry.names()
