"""The official MCP conformance suite (``@modelcontextprotocol/conformance`` on npm) against
nyz: its client scenarios against nyz's MCP client (``nyzhi.testing.mcp_conformance_client``,
the OAuth login flow and the headless elicitation defaults included), its server scenarios
against ``nyz mcp serve --http`` and, through a bridge, ``nyz mcp serve`` on stdio.

Every scenario the suite lists must pass (no check FAILURE; the suite's WARNINGs are SHOULDs
and timing notes, e.g. an SSE reconnection a little late on a loaded machine), except the
ones below, each with the reason, as docs/config.md ("MCP conformance") says too. A listed
scenario that starts passing fails the test, so the list cannot go stale.

The suite and node 22 live in ``<venv>/mcp-conformance`` (``make test`` installs them there);
``NYZ_TEST_MCP_CONFORMANCE`` names another such prefix. Without them the tests skip.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

PREFIX = Path(os.environ.get("NYZ_TEST_MCP_CONFORMANCE") or Path(sys.prefix) / "mcp-conformance")
BIN = PREFIX / "node_modules" / ".bin"
ROOT = Path(__file__).resolve().parents[3]

# Client scenarios for what nyz does not offer, or does not do yet (docs/config.md).
CLIENT_NOT_OFFERED = {
    "auth/client-credentials-jwt": "an OAuth extension (machine-to-machine, private_key_jwt): "
                                   "nyz logs a person in with the authorization code flow",
    "auth/client-credentials-basic": "an OAuth extension (machine-to-machine client "
                                     "credentials): nyz logs a person in",
    "auth/cross-app-access-complete-flow": "an OAuth extension (enterprise identity-provider "
                                           "token exchange, SEP-990): not offered",
}
# Server scenarios for what `nyz mcp serve` does not offer (docs/config.md). Most of the suite's
# server scenarios call the tools, resources and prompts of its own reference server
# (``test_simple_text``, ``test://static-text``, ...): nyz serves nyz's tools only.
_FIXTURE = "calls a tool of the suite's reference server; nyz serves its own tools"
SERVER_NOT_OFFERED = {
    **{f"tools-call-{kind}": _FIXTURE for kind in (
        "simple-text", "image", "audio", "embedded-resource", "mixed-content", "with-logging",
        "error", "with-progress", "sampling", "elicitation")},
    "json-schema-2020-12": _FIXTURE,
    "elicitation-sep1034-defaults": _FIXTURE,
    "elicitation-sep1330-enums": _FIXTURE,
    "logging-set-level": "nyz mcp serve offers no logging capability",
    "completion-complete": "nyz mcp serve offers no completions",
    "server-sse-polling": "nyz mcp serve keeps no SSE event store (no resumable streams)",
    **{f"resources-{kind}": "nyz mcp serve offers no resources" for kind in (
        "list", "read-text", "read-binary", "templates-read", "subscribe", "unsubscribe")},
    **{f"prompts-{kind}": "nyz mcp serve offers no prompts" for kind in (
        "list", "get-simple", "get-with-args", "get-embedded-resource", "get-with-image")},
}
# Client scenarios that pass with a WARNING nyz keeps on purpose.
CLIENT_WARNINGS = {
    "auth/basic-cimd": "nyz publishes no client ID metadata document (a command-line tool "
                       "has no HTTPS URL of its own), so it registers dynamically instead",
}


def _suite() -> Path:
    tool = BIN / "conformance"
    if not (tool.exists() and (BIN / "node").exists()):
        pytest.skip(f"the MCP conformance suite is not installed in {PREFIX} (make test "
                    f"installs it with node 22 from npm)")
    return tool


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
               PYTHONPATH=str(ROOT), **extra)
    env.pop("MCP_CONFORMANCE_SCENARIO", None)
    return env


def _listed(tool: Path, kind: str) -> list[str]:
    out = subprocess.run([str(tool), "list", f"--{kind}"], env=_env(), capture_output=True,
                         text=True, check=True, timeout=120).stdout
    return re.findall(r"^\s+- (\S+)", out, re.M)


def _results(out: Path, prefix: str = "") -> dict[str, list[dict]]:
    """scenario -> its checks, from ``-o out``: ``out/<prefix><scenario>-<timestamp>/checks.json``."""
    found: dict[str, list[dict]] = {}
    for checks in out.rglob("checks.json"):
        rel = checks.parent.relative_to(out).as_posix()
        name = re.sub(r"-\d{4}-\d\d-\d\dT[\d-]+Z$", "", rel).removeprefix(prefix)
        found[name] = json.loads(checks.read_text())
    return found


def _failures(checks: list[dict]) -> list[str]:
    return [f"{c['id']}: {c.get('errorMessage') or c.get('description')}"
            for c in checks if c["status"] == "FAILURE"]


def _judge(listed: list[str], results: dict[str, list[dict]], gaps: dict[str, str]) -> list[str]:
    problems = []
    for name in listed:
        checks = results.get(name)
        if checks is None:
            problems.append(f"{name}: no results")
            continue
        failed = _failures(checks)
        passed = [c for c in checks if c["status"] == "SUCCESS"]
        if name in gaps:
            if not failed and passed:
                problems.append(f"{name}: passes now; take it off the not-offered list")
        elif failed or not passed:
            problems.append(f"{name}: {failed or 'no passing check'}")
    return problems


def test_client_scenarios(tmp_path, home):
    """Every client scenario against nyz's MCP client (all OAuth and elicitation included)."""
    tool = _suite()
    listed = _listed(tool, "client")
    assert "auth/metadata-default" in listed and "elicitation-sep1034-client-defaults" in listed
    assert set(CLIENT_NOT_OFFERED) | set(CLIENT_WARNINGS) <= set(listed)
    command = f"{sys.executable} -m nyzhi.testing.mcp_conformance_client"
    out = tmp_path / "results"
    # the scenarios run in parallel: a generous per-client bound for a loaded machine
    subprocess.run([str(tool), "client", "--command", command, "--suite", "all",
                    "--timeout", "240000", "-o", str(out)], env=_env(), cwd=tmp_path,
                   capture_output=True, text=True, timeout=900)
    results = _results(out)
    assert _judge(listed, results, CLIENT_NOT_OFFERED) == []
    passed = [n for n in listed if n not in CLIENT_NOT_OFFERED]
    assert len(passed) >= 23  # initialize, tools_call, elicitation, sse-retry and 19 auth


def _serve_http(workspace, home) -> tuple[subprocess.Popen, str]:
    from test_mcp_run_e2e import env_for

    proc = subprocess.Popen([sys.executable, "-m", "nyzhi", "mcp", "serve", "--http",
                             "127.0.0.1:0", "--token", "conformance-token"], cwd=workspace,
                            env=env_for(home), stdin=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    seen = ""
    for line in proc.stderr:  # ends when nyz exits, so this cannot wait forever
        seen += line
        if "listening on " in line:
            return proc, line.split("listening on ", 1)[1].strip()
    _stop(proc)
    raise AssertionError(f"nyz mcp serve did not start: {seen}")


def _front(script: str, *args: str, **kw) -> tuple[subprocess.Popen, str]:
    """Start a loopback HTTP front (``bearer_proxy.py`` or ``stdio_http_bridge.py``)."""
    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name(script)), *args],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True, **kw)
    line = proc.stdout.readline()
    if not line.startswith("listening on "):
        _stop(proc)
        raise AssertionError(f"{script} did not start: {line!r}")
    return proc, line.split("listening on ", 1)[1].strip() + "/mcp"


def _server_suite(tool: Path, url: str, out: Path) -> dict[str, list[dict]]:
    subprocess.run([str(tool), "server", "--url", url, "--suite", "all", "-o", str(out)],
                   env=_env(), cwd=out.parent, capture_output=True, text=True, timeout=900)
    return _results(out, prefix="server-")


def _stop(*procs: subprocess.Popen | None) -> None:
    """Kill each process and close its pipes as it is waited for (``Popen.__exit__``): a
    killed process's pipe left open was closed by the collector, a ResourceWarning each (the
    server's stderr, the proxy's and the bridge's stdout)."""
    for proc in procs:
        if proc is not None:
            proc.kill()
            with proc:
                pass


def test_server_scenarios_over_http(tmp_path, workspace, home):
    """Every server scenario against ``nyz mcp serve --http`` (the token added by a proxy)."""
    tool = _suite()
    listed = _listed(tool, "server")
    assert {"server-initialize", "tools-list", "dns-rebinding-protection"} <= set(listed)
    assert set(SERVER_NOT_OFFERED) <= set(listed)
    serve, url = _serve_http(workspace, home)
    proxy = None
    try:
        proxy, proxied = _front("bearer_proxy.py", url, "conformance-token", env=_env())
        results = _server_suite(tool, proxied, tmp_path / "results")
    finally:
        _stop(proxy, serve)
    assert _judge(listed, results, SERVER_NOT_OFFERED) == []
    passed = [n for n in listed if n not in SERVER_NOT_OFFERED]
    assert len(passed) >= 5  # initialize, ping, tools/list, SSE streams, DNS rebinding


def test_server_scenarios_over_stdio(tmp_path, workspace, home):
    """Every server scenario against ``nyz mcp serve`` on stdio, through a bridge that only
    carries its JSON-RPC lines over HTTP (one child per MCP session)."""
    from test_mcp_run_e2e import env_for

    tool = _suite()
    listed = _listed(tool, "server")
    gaps = {**SERVER_NOT_OFFERED, "dns-rebinding-protection":
            "HTTP only: stdio has no Host or Origin (the bridge in front checks none)"}
    bridge = None
    try:
        bridge, url = _front("stdio_http_bridge.py", "--", sys.executable, "-m", "nyzhi",
                             "mcp", "serve", cwd=workspace, env=env_for(home))
        results = _server_suite(tool, url, tmp_path / "results")
    finally:
        _stop(bridge)
    assert _judge(listed, results, gaps) == []
    passed = [n for n in listed if n not in gaps]
    assert len(passed) >= 4  # initialize, ping, tools/list, concurrent POST streams
