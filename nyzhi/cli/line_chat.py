"""Plain line-mode chat over the shared runtime (stands in until the urwid console).

One reader task turns stdin lines into a channel; the chat loop sends them to the agent or,
while an approval is pending, answers it (y = yes, a = always for this session, anything
else = no). Ctrl-C cancels the running turn; at the prompt it exits. ``/exit`` or EOF quits.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import Any

import trio

HELP = """commands: /exit (or Ctrl-D) quit · /cancel cancel the turn · /compact compact the context
          /undo revert the last file change · /mcp MCP servers (read, prompt) · /help this text
Ctrl-C cancels a running turn. Approvals: y = yes, a = always this session, n = no."""


async def _read_lines(send: trio.MemorySendChannel[str | None]) -> None:
    async with send:
        while True:
            line = await trio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
            if not line:
                await send.send(None)
                return
            await send.send(line.rstrip("\n"))


async def chat(args: argparse.Namespace) -> int:
    from nyzhi.core.runtime import RuntimeOptions, open_runtime

    options = RuntimeOptions(
        cwd=Path.cwd(),
        provider=getattr(args, "provider", None),
        model=getattr(args, "model", None),
        trust=getattr(args, "trust", None),
        continue_latest=getattr(args, "continue_", False),
        session=getattr(args, "session", None),
        interactive=True,
    )
    out = sys.stdout
    async with open_runtime(options) as rt:
        for notice in rt.notices:
            print(notice, file=sys.stderr)
        print(f"nyz · {rt.provider_name}/{rt.model} · session {rt.session_id[:8]} · /help", file=out)
        pending: list[Any] = []  # approval requests waiting for an answer
        busy = trio.Event()
        busy.set()
        lines_send, lines = trio.open_memory_channel[str | None](16)
        async with rt.subscribe() as events, trio.open_nursery() as nursery:
            nursery.start_soon(_read_lines, lines_send)

            async def pump() -> None:
                async for event in events:
                    kind = event.type
                    if kind == "text_delta":
                        out.write(event.text)
                    elif kind == "tool_start":
                        out.write(f"\n[tool: {event.name}]\n")
                    elif kind == "tool_done":
                        status = "failed" if event.is_error else "done"
                        preview = (event.output or "").strip().replace("\n", " ")[:160]
                        out.write(f"[{event.name} {status}] {preview}\n")
                    elif kind == "user_question":
                        pending.append(event)
                        out.write(f"\n{event.question}\n")
                        for i, opt in enumerate(event.options, 1):
                            out.write(f"  {i}. {opt.get('label', opt.get('value'))}\n")
                        out.write("answer (number" + (" or text" if event.allow_custom else "") + "): ")
                    elif kind == "approval_request":
                        pending.append(event)
                        out.write(f"\n{event.preview or ''}\nApprove {event.tool}: {event.summary}? [y/a/N] ")
                    elif kind == "error":
                        out.write(f"\nerror: {event.message}\n")
                    elif kind == "turn_complete":
                        out.write("\n" if event.stop_reason != "cancelled" else "\n[cancelled]\n")
                    out.flush()

            async def on_sigint() -> None:
                with trio.open_signal_receiver(signal.SIGINT) as sigs:
                    async for _ in sigs:
                        if not busy.is_set():
                            await rt.cancel()
                        else:
                            nursery.cancel_scope.cancel()
                            return

            nursery.start_soon(pump)
            nursery.start_soon(on_sigint)

            async def run_turn(text: str) -> None:
                nonlocal busy
                busy = trio.Event()
                try:
                    handle = await rt.submit(text)
                    await handle.wait()
                finally:
                    busy.set()
                    out.write("> ")
                    out.flush()

            out.write("> ")
            out.flush()
            async for line in lines:
                if line is None:
                    break
                if pending and pending[0].type == "user_question":
                    question = pending.pop(0)
                    text = line.strip()
                    if text.isdigit() and 1 <= int(text) <= len(question.options):
                        text = question.options[int(text) - 1].get("value", text)
                    await rt.answer_question(question.request_id, text)
                    continue
                if pending:
                    request = pending.pop(0)
                    answer = line.strip().lower()
                    decision = {"y": "approve", "yes": "approve", "a": "always"}.get(answer, "deny")
                    await rt.answer_approval(request.request_id, decision)
                    continue
                text = line.strip()
                if not text:
                    out.write("> ")
                    out.flush()
                    continue
                if text in ("/exit", "/quit"):
                    break
                if text == "/help":
                    out.write(HELP + "\n> ")
                elif text == "/cancel":
                    await rt.cancel()
                elif not busy.is_set():
                    # the thread and the files belong to the running turn until it ends
                    out.write("[a turn is running; Ctrl-C or /cancel first]\n")
                elif text == "/compact":
                    await rt.compact()
                    out.write("[context compacted]\n> ")
                elif text == "/undo":
                    out.write(rt.undo() + "\n> ")
                elif text == "/mcp" or text.startswith("/mcp "):
                    from nyzhi.cli.mcp_console import mcp_command

                    prompt = await mcp_command(rt, text, out)
                    if prompt:
                        nursery.start_soon(run_turn, prompt)
                    else:
                        out.write("> ")
                else:
                    nursery.start_soon(run_turn, text)
                out.flush()
            nursery.cancel_scope.cancel()
    return 0


def main(args: argparse.Namespace) -> int:
    try:
        return trio.run(chat, args)
    except Exception as exc:
        from nyzhi.core.errors import describe_error

        print(f"nyz: {describe_error(exc)}", file=sys.stderr)
        return 1
