"""Models nyz does not know (issue 43): the context window comes from the config, the server
or a realistic default, and compaction cannot thrash. ``nyz run`` as a user runs it, against
the scripted fake LLM over real HTTP; the resolver's sources are checked in process."""

from __future__ import annotations

import json

from nyzhi.core.loop.turn import TurnLoop, TurnSettings
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.provider import types as pt
from nyzhi.testing.cli import json_lines, run_nyz
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call

STEPS = 15
FILE_CHARS = 10 * 1024


def reading_script(steps: int = STEPS):
    """``steps`` model steps that each read a 10 KB file, then an answer. Summary requests
    (compaction) get their own reply, so they never shift the script."""
    n = 0

    def answer(req):
        nonlocal n
        if "Summarise the conversation" in req.last_user_text():
            return reply("SUMMARY")
        n += 1
        if n <= steps:
            return reply(tool_calls=[tool_call("read", {"file_path": f"f{n}.txt"})])
        return reply("all read")

    return answer


def write_files(ws, steps: int = STEPS) -> None:
    for i in range(1, steps + 1):
        line = f"file {i} line of text that a model reads while working on it\n"
        (ws / f"f{i}.txt").write_text((line * (FILE_CHARS // len(line) + 1))[:FILE_CHARS])


def summaries(server) -> int:
    return sum("Summarise the conversation" in r.last_user_text() for r in server.requests)


async def test_unknown_model_reads_15_files_without_compacting(workspace, home, configure):
    write_files(workspace)
    async with open_fake_llm(script=reading_script()) as server:
        configure(workspace, server.url_for("openai"))
        proc = await run_nyz(workspace, home, "run", "read")
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().strip() == "all read"
    err = proc.stderr.decode()
    assert "[compacted context" not in err
    assert summaries(server) == 0 and len(server.requests) == STEPS + 1
    # said once, naming the model and the key that sets its window
    assert err.count("context window of model 'fake-model-1' is unknown") == 1, err
    assert "assuming 128000 tokens" in err and "[provider.fake] context_window" in err


async def test_configured_small_window_compacts_without_thrashing(workspace, home, configure):
    write_files(workspace)
    async with open_fake_llm(script=reading_script()) as server:
        configure(workspace, server.url_for("openai"), extra=(
            '[provider.fake.models."fake-model-1"]\ncontext_window = 8192\n'))
        proc = await run_nyz(workspace, home, "run", "--output-format", "stream-json", "read")
    assert proc.returncode == 0, proc.stderr.decode()
    events = json_lines(proc.stdout)
    assert events[-1]["result"] == "all read"
    compactions = [e for e in events if e["type"] == "compaction"]
    assert compactions and all(c["reason"] == "threshold" for c in compactions)
    assert summaries(server) == len(compactions) < STEPS
    # 10 KB a step fills most of an 8k window. A compaction that freed less than a tenth of
    # it is not repeated at the next step.
    step, at = 0, []
    for e in events:
        step += e["type"] == "tool_done"
        if e["type"] == "compaction":
            at.append((step, e["before_tokens"] - e["after_tokens"]))
    for (step, freed), (next_step, _) in zip(at, at[1:], strict=False):
        assert freed >= 819 or next_step >= step + 2, at
    assert "is unknown" not in proc.stderr.decode()  # the config said it


async def test_window_smaller_than_the_fixed_prompt_is_one_clear_error(workspace, home, configure):
    async with open_fake_llm(script=[reply("never")]) as server:
        configure(workspace, server.url_for("anthropic"), api_style="anthropic")
        config = workspace / ".nyzhi" / "config.toml"  # [provider.fake] context_window = 2000
        config.write_text(config.read_text().replace(
            'api_key = "sk-test-key"\n', 'api_key = "sk-test-key"\ncontext_window = 2000\n'))
        proc = await run_nyz(workspace, home, "run", "--output-format", "stream-json", "hi")
    assert proc.returncode == 1
    errors = [e for e in json_lines(proc.stdout) if e["type"] == "error"]
    assert len(errors) == 1 and errors[0]["kind"] == "context"
    message = errors[0]["message"]
    assert "system prompt and tool definitions" in message and "2000-token" in message
    assert "fake-model-1" in message and "context_window" in message
    assert server.requests == []  # no model call, no compaction loop


async def test_llama_cpp_props_supplies_the_window(workspace, home, configure):
    props = {"default_generation_settings": {"n_ctx": 12288}, "total_slots": 1}
    async with open_fake_llm(script=[reply("ok")], props=props) as server:
        configure(workspace, server.url_for("llama-cpp"), api_style="llama-cpp")
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            loop = rt.main_agent.loop
            limits = rt.factory.limits.known("fake-model-1")
            assert (limits.context_window, limits.source) == (12288, "server")
            assert (loop.settings.context_window, loop.settings.window_source) == (12288, "server")
            assert not any("is unknown" in n for n in rt.notices)
    assert "/props" in [r.path for r in server.info_requests]  # asked with the others, read first


async def test_openrouter_model_list_supplies_the_window_and_is_cached(workspace, home, configure):
    fields = {"fake-model-1": {"context_length": 65536,
                               "top_provider": {"context_length": 65536,
                                                "max_completion_tokens": 8000}},
              "fake-model-2": {"context_length": 32768}}
    async with open_fake_llm(script=[reply("ok")], model_fields=fields) as server:
        configure(workspace, server.url_for("openai"))
        proc = await run_nyz(workspace, home, "run", "hi")
        assert proc.returncode == 0, proc.stderr.decode()
        assert "is unknown" not in proc.stderr.decode()
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            limits = rt.factory.limits.known("fake-model-1")
            assert (limits.context_window, limits.max_output) == (65536, 8000)
            assert (limits.source, limits.output_source) == ("server", "server")
    assert "/v1/models" in [r.path for r in server.info_requests]
    # the answer went to the cache with the rest of the model list
    [cache] = (home / ".cache" / "nyzhi" / "models").glob("*.json")
    cached = json.loads(cache.read_text())["models"]
    assert cached["fake-model-1"]["context_window"] == 65536
    assert cached["fake-model-2"]["context_window"] == 32768


class Scripted:
    """An in-process provider answering each request with the next text."""

    name = "scripted"
    model = "scripted-model"

    def __init__(self, texts):
        self.texts = list(texts)
        self.requests: list[pt.ChatRequest] = []

    async def stream(self, request):
        self.requests.append(request)
        yield pt.TextDelta(self.texts.pop(0))
        yield pt.Stop("end_turn")


async def test_a_compaction_that_frees_too_little_is_not_repeated(tmp_path):
    big = "y" * 6000  # the kept tail is big: summarising the rest frees almost nothing
    provider = Scripted(["SUMMARY", "one", "two"])
    events = []

    async def emit(event):
        events.append(event)

    async def no_tools(calls, results):
        raise AssertionError("no tools here")

    loop = TurnLoop(
        agent_path="/agents/main", provider=provider, tool_schemas=lambda: [],
        tool_step=no_tools, system_prompt=lambda: "system", emit=emit,
        settings=TurnSettings(context_window=8000, archive_dir=tmp_path, keep_recent=6),
    )
    loop.messages += [pt.Message("user", "first"), pt.Message("assistant", "ok"),
                      pt.Message("user", "small"), pt.Message("assistant", "small")]
    loop.messages += [pt.Message("user" if i % 2 == 0 else "assistant", big) for i in range(5)]
    assert (await loop.run("next")).text == "one"  # over the threshold: compacted once
    assert (await loop.run("again")).text == "two"  # still over it, but not compacted again
    comp = [e for e in events if e.type == "compaction"]
    assert len(comp) == 1 and comp[0].before_tokens - comp[0].after_tokens < 800
    summaries_asked = [r for r in provider.requests if "Summarise" in r.messages[0].content]
    assert len(summaries_asked) == 1
