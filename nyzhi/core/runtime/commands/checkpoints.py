"""The checkpoint commands, for every front end: ``/rewind``, ``/checkpoint``, ``/retry``
(``/undo all`` is ``/undo``'s, in ``builtin``). What they do is
``nyzhi.core.runtime.checkpoints.actions``; here only the words are read and the lines shown."""

from __future__ import annotations

from typing import Any

from nyzhi.core.runtime.commands.registry import BODY, ERROR, NOTICE, CommandHost, command

REWIND_USAGE = ("usage: /rewind lists the prompts · /rewind N [code|conversation|both] [force]"
                " restores the state just before prompt N (default both)")
CHECKPOINT_USAGE = ("usage: /checkpoint list · /checkpoint save NAME · "
                    "/checkpoint restore NAME [code|conversation|both] [force]")


def _failure(exc: Exception) -> bool:
    """Whether ``exc`` is a checkpoint that cannot be used, said in one line to the user."""
    from nyzhi.core.runtime.checkpoints import CheckpointError
    from nyzhi.tools.paths import ToolPathError

    return isinstance(exc, CheckpointError | OSError | ToolPathError | ValueError)


async def _restore(host: CommandHost, target: str, words: list[str], hint: str) -> None:
    from nyzhi.core.runtime.checkpoints import actions
    from nyzhi.core.runtime.checkpoints.rewind import parse_mode

    try:
        mode, force = parse_mode(words)
        lines = await actions.rewind(host.rt, target, mode, force=force, force_hint=hint)
    except Exception as exc:
        if not _failure(exc):
            raise
        host.show(ERROR, str(exc))
        return
    host.show(BODY, "\n".join(lines))
    host.refresh_status()


@command("rewind", "list prompts · /rewind N [code|conversation|both]", idle_only=True)
async def _rewind(host: CommandHost, arg: str) -> None:
    from nyzhi.core.runtime.checkpoints import actions

    words = arg.split()
    if not words:
        host.show(BODY, "\n".join(await actions.listing(
            host.rt, "/rewind N [code|conversation|both] restores the state just before N")))
        return
    if not words[0].isdigit():
        host.show(ERROR, REWIND_USAGE)
        return
    await _restore(host, words[0], words[1:], f"/rewind {words[0]} ... force")


@command("checkpoint", "named checkpoints: /checkpoint save|list|restore NAME", idle_only=True)
async def _checkpoint(host: CommandHost, arg: str) -> None:
    from nyzhi.core.runtime.checkpoints import CheckpointError, actions

    words = arg.split()
    action = words[0] if words else "list"
    if action == "list" and len(words) <= 1:
        host.show(BODY, "\n".join(await actions.listing(
            host.rt, "/rewind N [code|conversation|both] restores the state just before N")))
    elif action == "save" and len(words) == 2:
        try:
            host.show(NOTICE, await actions.save(host.rt, words[1]))
        except CheckpointError as exc:
            host.show(ERROR, str(exc))
    elif action == "restore" and len(words) >= 2:
        await _restore(host, words[1], words[2:], f"/checkpoint restore {words[1]} ... force")
    else:
        host.show(ERROR, CHECKPOINT_USAGE)


@command("retry", "the last prompt again, after undoing its changes", idle_only=True)
async def _retry(host: CommandHost, arg: str) -> None:
    from nyzhi.core.runtime.checkpoints import actions

    if arg not in ("", "force"):
        host.show(ERROR, "usage: /retry · /retry force")
        return
    try:
        lines, prompt = await actions.retry_prompt(host.rt, force=arg == "force")
    except Exception as exc:
        if not _failure(exc):
            raise
        host.show(ERROR, str(exc))
        return
    host.show(BODY, "\n".join([*lines, "sending the prompt again"]))
    host.send_main(prompt)


async def undo(host: Any, arg: str) -> None:
    """``/undo`` (the last change) and ``/undo all`` (every change of the turn)."""
    from nyzhi.core.runtime.checkpoints import actions

    if arg == "all":
        host.show(BODY, await actions.undo_turn(host.rt))
    elif arg:
        host.show(ERROR, "usage: /undo (the last change) · /undo all (the whole turn)")
    else:
        host.show(BODY, host.rt.undo())
