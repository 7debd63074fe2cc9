"""What the ``lsp_*`` tools ask a language server, and how the answer is rendered.

The tools (``nyzhi.tools.builtin.lsp``) sit below core, so they reach this through the pool
on their context (``ctx.lsp.ask``), which maps every failure to a plain sentence: no server
for the language, the server failed or is restarting, the request timed out.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import trio

from nyzhi.core.runtime.lsp.pool import sync_from_disk
from nyzhi.core.runtime.lsp.render import (
    hover_text,
    locations,
    render_diagnostics,
    render_locations,
    render_symbols,
    shown,
)
from nyzhi.core.runtime.lsp.servers import NoServer
from nyzhi.core.runtime.lsp.text import line_at, offset_of, path_of, utf16_column
from nyzhi.jsonrpc import PeerGone, RpcError


class OpError(Exception):
    """A request that cannot be answered; the message is for the model."""


def find_symbol(text: str, symbol: str, line: int | None) -> tuple[int, int] | None:
    """(0-based line, 1-based column) of ``symbol`` as a whole word: on ``line`` if given,
    else its first definition-looking occurrence (``def``/``class``/``function``...), else
    its first occurrence."""
    word = re.compile(rf"(?<![\w$]){re.escape(symbol)}(?![\w$])")
    lines = text.splitlines()
    if line is not None:
        if 0 <= line < len(lines) and (m := word.search(lines[line])):
            return line, m.start() + 1
        return None
    definition = re.compile(
        rf"\b(def|class|function|interface|type|const|let|var|func|fn|struct|enum|trait|"
        rf"impl)\s+{re.escape(symbol)}(?![\w$])")
    for i, src in enumerate(lines):
        if m := definition.search(src):
            return i, m.end() - len(symbol) + 1
    for i, src in enumerate(lines):
        if m := word.search(src):
            return i, m.start() + 1
    return None


async def _position(pool: Any, client: Any, path: Path, line: int | None, column: int | None,
                    symbol: str | None) -> Any:
    from lsprotocol import types as lsp

    text = client.docs[_uri(path)].text
    if symbol:
        at = find_symbol(text, symbol, line - 1 if line else None)
        if at is None:
            where = f" on line {line}" if line else ""
            raise OpError(f"`{symbol}` does not occur{where} in {shown(path, pool.workspace)}; "
                          "give line and column, or grep for it")
        row, col = at
    else:
        if line is None:
            raise OpError("give line and column (1-based), or symbol")
        row = line - 1
        src = line_at(text, row)
        if row >= len(text.splitlines()):
            raise OpError(f"{shown(path, pool.workspace)} has no line {line}")
        col = column if column is not None else len(src) - len(src.lstrip()) + 1
    return lsp.Position(line=row, character=utf16_column(line_at(text, row), col))


def _uri(path: Path) -> str:
    from nyzhi.core.runtime.lsp.text import uri_of

    return uri_of(path)


def _doc(path: Path) -> Any:
    from lsprotocol import types as lsp

    return lsp.TextDocumentIdentifier(uri=_uri(path))


async def position_op(pool: Any, op: str, path: Path, line: int | None, column: int | None,
                      symbol: str | None, new_name: str | None = None) -> Any:
    from lsprotocol import types as lsp

    timeout = pool.config.request_timeout
    async with pool.session(path) as (client, _link):
        pos = await _position(pool, client, path, line, column, symbol)
        doc = _doc(path)
        if op == "definition":
            result = await client.call(lsp.TEXT_DOCUMENT_DEFINITION, lsp.DefinitionParams(
                text_document=doc, position=pos), timeout)
            found = locations(result)
            if not found:
                return "no definition found (the server knows none at that position)"
            return "\n".join(render_locations(found, pool.workspace, readable=pool.readable))
        if op == "references":
            result = await client.call(lsp.TEXT_DOCUMENT_REFERENCES, lsp.ReferenceParams(
                text_document=doc, position=pos,
                context=lsp.ReferenceContext(include_declaration=True)), timeout)
            found = locations(result)
            if not found:
                return "no references found"
            lines = render_locations(found, pool.workspace, readable=pool.readable)
            n = len(found)
            return f"{n} reference{'s' if n != 1 else ''}:\n" + "\n".join(lines)
        if op == "hover":
            result = await client.call(lsp.TEXT_DOCUMENT_HOVER, lsp.HoverParams(
                text_document=doc, position=pos), timeout)
            return hover_text(result) or "no information at that position"
        if op == "rename":
            # Some servers (pyright) rename only in open documents: open every file that
            # refers to the symbol first, and compute the edits on what the files hold now.
            refs = await client.call(lsp.TEXT_DOCUMENT_REFERENCES, lsp.ReferenceParams(
                text_document=doc, position=pos,
                context=lsp.ReferenceContext(include_declaration=True)), timeout)
            await sync_from_disk(client, {p for p, _start in locations(refs)})
            result = await client.call(lsp.TEXT_DOCUMENT_RENAME, lsp.RenameParams(
                text_document=doc, position=pos, new_name=new_name or ""), timeout)
            return workspace_edit_texts(pool, result, client)
    raise OpError(f"unknown operation {op!r}")


def workspace_edit_texts(pool: Any, edit: Any, client: Any) -> dict[Path, tuple[str, str]]:
    """(text the edit was computed on, new text) of every file a WorkspaceEdit changes (file creations, renames and
    deletions are refused: a rename of a symbol never needs them)."""
    if edit is None:
        raise OpError("the server found nothing to rename at that position")
    per_file: dict[Path, list[Any]] = {}
    for uri, edits in (edit.changes or {}).items():
        per_file.setdefault(path_of(uri), []).extend(edits)
    for change in edit.document_changes or ():
        if not hasattr(change, "edits"):
            raise OpError("the server's rename also creates, renames or deletes files; "
                          "nyz applies text edits only: rename the files with move_file")
        per_file.setdefault(path_of(change.text_document.uri), []).extend(change.edits)
    out: dict[Path, tuple[str, str]] = {}
    for path, edits in per_file.items():
        doc = client.docs.get(_uri(path))
        if doc is not None:
            text = doc.text
        else:
            if not pool.readable(path):
                raise OpError(f"the rename would change {path}, which nyz may not read")
            text = path.read_text(encoding="utf-8")
        base = text
        # apply from the end, so earlier offsets stay valid
        spans = sorted(((offset_of(text, e.range.start.line, e.range.start.character),
                         offset_of(text, e.range.end.line, e.range.end.character), e.new_text)
                        for e in edits), key=lambda s: (s[0], s[1]), reverse=True)
        for start, end, new in spans:
            text = text[:start] + new + text[end:]
        if text != base:
            out[path] = (base, text)
    if not out:
        raise OpError("the server found nothing to rename at that position")
    return out


async def symbols_op(pool: Any, path: Path | None, query: str | None) -> str:
    from lsprotocol import types as lsp

    timeout = pool.config.request_timeout
    if path is not None:
        async with pool.session(path) as (client, _link):
            if query:
                result = await client.call(lsp.WORKSPACE_SYMBOL, lsp.WorkspaceSymbolParams(
                    query=query), timeout)
                lines = render_symbols(result, None, pool.workspace)
            else:
                result = await client.call(
                    lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL,
                    lsp.DocumentSymbolParams(text_document=_doc(path)), timeout)
                lines = render_symbols(result, path, pool.workspace)
        return "\n".join(lines) or "no symbols found"
    running = pool.running()
    if not running:
        raise OpError("no language server is running yet: give a file (its language picks "
                      "the server), or use grep")
    lines = []
    for link in running:
        with link.using():
            result = await link.client.call(lsp.WORKSPACE_SYMBOL, lsp.WorkspaceSymbolParams(
                query=query or ""), timeout)
        lines += render_symbols(result, None, pool.workspace)
    return "\n".join(lines) or f"no symbols matching {query!r}"


async def diagnostics_op(pool: Any, path: Path | None) -> str:
    if path is not None:
        async with pool.session(path) as (client, _link):
            got = client.diagnostics.get(_uri(path))
            # nothing published yet, or (a server that says) for an older text: wait for it
            if got is None or (got.version is not None and got.version < client.version(path)):
                await client.wait_diagnostics(path, got.seq if got else -1,
                                              pool.config.request_timeout)
            items = client.diagnostics_of(path) or []
        if not items:
            return f"{shown(path, pool.workspace)}: no problems reported"
        pairs = [(path, d) for d in items]
        return "\n".join(render_diagnostics(pairs, pool.workspace, pool.readable))
    running = pool.running()
    if not running:
        return ("no language server is running yet, so nothing is known about the workspace: "
                "give a file to check it")
    pairs = []
    for link in running:
        for p, items in sorted(link.client.all_diagnostics().items(), key=lambda kv: str(kv[0])):
            pairs += [(p, d) for d in items]
    if not pairs:
        return "no problems reported in the files the language servers have seen"
    errors = sum(1 for _p, d in pairs if d.severity is None or int(d.severity) == 1)
    head = f"{len(pairs)} problems ({errors} errors) in the files the servers have seen:"
    lines = render_diagnostics(pairs[:200], pool.workspace, pool.readable)
    more = [f"… and {len(pairs) - 200} more"] if len(pairs) > 200 else []
    return "\n".join([head, *lines, *more])


def explain(exc: BaseException, op: str) -> str:
    """A failure as one sentence for the model."""
    if isinstance(exc, NoServer | OpError):
        return str(exc)
    if isinstance(exc, PeerGone):
        return (f"the language server went away during {op} ({exc}); it is being restarted, "
                "so the call can be retried")
    if isinstance(exc, trio.TooSlowError):
        return f"the language server did not answer {op} in time; retry, or use grep"
    if isinstance(exc, RpcError):
        return (f"the language server could not answer {op}: {exc.method}: {exc.message} "
                f"(code {exc.code})")
    return f"{type(exc).__name__}: {exc}"
