"""``nyz models``, ``nyz models refresh`` and the OpenAI-compatible presets, as a user runs
them: real subprocesses against the scripted fake LLM server."""

from __future__ import annotations

import json
import subprocess

import trio

from nyzhi.config.presets import BUILTIN_PROVIDERS
from nyzhi.testing.cli import NYZ, nyz_env, run_nyz
from nyzhi.testing.fake_llm import open_fake_llm, reply

NEW_PRESETS = {  # name: (key variable, base URL host)
    "moonshot": ("MOONSHOT_API_KEY", "api.moonshot.ai"),
    "minimax": ("MINIMAX_API_KEY", "api.minimax.io"),
    "zai": ("ZAI_API_KEY", "api.z.ai"),
    "xai": ("XAI_API_KEY", "api.x.ai"),
    "mistral": ("MISTRAL_API_KEY", "api.mistral.ai"),
    "cerebras": ("CEREBRAS_API_KEY", "api.cerebras.ai"),
    "fireworks": ("FIREWORKS_API_KEY", "api.fireworks.ai"),
    "lmstudio": ("LMSTUDIO_API_KEY", "localhost:1234"),
    "vllm": ("VLLM_API_KEY", "localhost:8000"),
}


def test_the_new_presets_are_openai_compatible_with_their_key_variable():
    for name, (var, host) in NEW_PRESETS.items():
        preset = BUILTIN_PROVIDERS[name]
        assert preset.api_style == "openai" and host in preset.base_url
        assert preset.env_vars[0] == var
        assert preset.needs_key == (name not in ("lmstudio", "vllm"))
        assert bool(preset.default_model) == preset.needs_key  # local: the listed model


async def test_nyz_models_lists_the_table_and_one_provider(workspace, home):
    every = await run_nyz(workspace, home, "models")
    assert every.returncode == 0, every.stderr.decode()
    out = every.stdout.decode()
    for default in ("gpt-5.5 *", "claude-opus-5 *", "gemini-3.1-pro-preview *", "kimi-k2.6 *"):
        assert default in out
    row = next(line for line in out.splitlines() if line.startswith("claude-sonnet-4-5 "))
    assert row.split() == ["claude-sonnet-4-5", "anthropic", "200,000", "64,000", "3.00", "15.00",
                           "yes", "budget"]
    one = await run_nyz(workspace, home, "models", "gemini")
    listed = [line.split()[0] for line in one.stdout.decode().splitlines()[1:-1]]
    assert listed and all(m.startswith("gemini-") for m in listed)
    bad = await run_nyz(workspace, home, "models", "nonesuch")
    assert bad.returncode == 1 and "unknown provider 'nonesuch'" in bad.stderr.decode()


async def test_refresh_caches_each_providers_listing(workspace, home, configure):
    async with open_fake_llm(models=("alpha-1", "beta-2")) as server:
        configure(workspace, server.url_for("openai"),
                  extra='\n[provider.dead]\nbase_url = "http://127.0.0.1:9/v1"\napi_key = "k"\n'
                        'model = "m"\n')
        refreshed = await run_nyz(workspace, home, "models", "refresh")
    assert refreshed.returncode == 0  # one provider answered
    assert "fake: 2 models" in refreshed.stdout.decode()
    assert refreshed.stderr.decode().startswith("dead: ")  # the other, on one line
    cache = json.loads((home / ".cache" / "nyzhi" / "models.json").read_text())
    assert cache["fake"]["models"] == ["alpha-1", "beta-2"] and "dead" not in cache
    assert server.info_requests[0].path == "/v1/models"  # GETs: info_requests (fake_llm)
    assert server.info_requests[0].headers["authorization"] == "Bearer sk-test-key"
    shown = await run_nyz(workspace, home, "models", "fake")
    assert "fake lists 2 models" in shown.stdout.decode() and "  beta-2" in shown.stdout.decode()


async def test_a_key_in_the_environment_picks_a_new_preset(workspace, home, approve_project):
    async with open_fake_llm(script=[reply("from kimi")]) as server:
        (workspace / ".nyzhi" / "config.toml").write_text(
            f'[provider.moonshot]\nbase_url = "{server.url_for("openai")}"\n')
        approve_project(workspace)  # base_url is a gated key (issue 49)
        env = {**nyz_env(home), "MOONSHOT_API_KEY": "sk-moon"}
        with trio.fail_after(60):
            proc = await trio.run_process([*NYZ, "run", "hi"], cwd=workspace, env=env,
                                          stdin=subprocess.DEVNULL, capture_stdout=True,
                                          capture_stderr=True, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().strip() == "from kimi"
    [request] = server.requests
    assert request.json["model"] == "kimi-k2.6"
    assert request.headers["authorization"] == "Bearer sk-moon"


async def test_a_local_server_preset_runs_the_model_it_lists(workspace, home, approve_project):
    async with open_fake_llm(script=[reply("local answer")], models=("loaded-model",)) as server:
        (workspace / ".nyzhi" / "config.toml").write_text(
            f'[provider]\ndefault = "vllm"\n\n[provider.vllm]\n'
            f'base_url = "{server.url_for("openai")}"\n')
        approve_project(workspace)  # base_url is a gated key (issue 49)
        proc = await run_nyz(workspace, home, "run", "hi")
        assert proc.returncode == 0, proc.stderr.decode()
        assert server.requests[-1].json["model"] == "loaded-model"
        assert "authorization" not in server.requests[-1].headers  # keyless
    (workspace / ".nyzhi" / "config.toml").write_text(
        '[provider]\ndefault = "lmstudio"\n\n[provider.lmstudio]\n'
        'base_url = "http://127.0.0.1:9/v1"\n')
    approve_project(workspace)
    down = await run_nyz(workspace, home, "run", "hi")
    err = down.stderr.decode()
    assert down.returncode == 1 and "provider 'lmstudio': cannot list the models" in err
    assert "Traceback" not in err
