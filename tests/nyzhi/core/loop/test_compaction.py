"""compact(): the archive is written off the trio thread; the state record sits after the
summary, verbatim, and the kept tail stays a valid thread."""

from __future__ import annotations

import json
import threading

from nyzhi.core.loop import compaction
from nyzhi.core.loop.state_record import HEADER, StateRecord
from nyzhi.provider import types as pt


class OneAnswer:
    name = "one"
    model = "one-model"

    def __init__(self, text: str) -> None:
        self.text = text
        self.requests: list[pt.ChatRequest] = []

    async def stream(self, request):
        self.requests.append(request)
        if self.text:
            yield pt.TextDelta(self.text)
        yield pt.Stop("end_turn")


def thread(n: int) -> list[pt.Message]:
    out = []
    for i in range(n):
        out += [pt.Message("user", f"question {i}"), pt.Message("assistant", f"answer {i}")]
    return out


async def test_archive_is_written_in_a_worker_thread(tmp_path, monkeypatch):
    writers: list[threading.Thread] = []
    real = compaction.archive_history

    def spy(*args):
        writers.append(threading.current_thread())
        return real(*args)

    monkeypatch.setattr(compaction, "archive_history", spy)
    messages = thread(6)
    result = await compaction.compact(OneAnswer("short"), messages, archive_dir=tmp_path, stem="s")
    assert result is not None and result.archived_path is not None
    assert writers and writers[0] is not threading.current_thread()  # not the trio thread
    lines = result.archived_path.read_text().splitlines()
    assert [json.loads(line)["content"] for line in lines] == [m.content for m in messages]


async def test_state_record_follows_the_summary_even_when_it_is_empty():
    record = StateRecord("ship v2", files=[("src/app.py", "edited")])
    result = await compaction.compact(OneAnswer(""), thread(6), archive_dir=None, stem="s",
                                      state=record)
    assert result is not None and result.state == record
    head = result.messages[0].content
    assert head.startswith(f"{compaction.SUMMARY_HEADER}\n(no summary)\n\n{HEADER}")
    assert record.render() in head
    assert head.index(record.render()) < head.index("[Working state restored")
    # user, assistant alternation is kept after the head
    assert [m.role for m in result.messages[:3]] == ["user", "assistant", "user"]



def test_the_archive_is_the_session_log_message_format_and_reads_back(tmp_path):
    from nyzhi.core.runtime.sessions.records import message_from_json, message_to_json

    messages = [
        pt.Message("user", "run it"),
        pt.Message("assistant", "", tool_calls=(pt.ToolCall("c1", "bash", '{"cmd": "ls"}'),),
                   thinking="hmm", thinking_signature="sig"),
        pt.Message("tool", "boom", tool_call_id="c1", name="bash", is_error=True),
    ]
    path = compaction.archive_history(messages, tmp_path, "s")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines == [message_to_json(m) for m in messages]  # one format, compact
    assert lines[0] == {"role": "user", "content": "run it"}
    assert [message_from_json(line) for line in lines] == messages
