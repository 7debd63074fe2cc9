"""One running language server: the initialize handshake, open documents and the
diagnostics it published. Messages are built and read with ``lsprotocol``'s types.

Importing this module imports ``lsprotocol`` (~0.2 s, with its cattrs converter): the
connection actor imports it in a worker thread on the first server start, so neither
``nyz run`` nor a session that never asks a language server pays for it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import trio
from lsprotocol import converters
from lsprotocol import types as lsp

from nyzhi.core.runtime.lsp.servers import ServerChoice, language_of
from nyzhi.core.runtime.lsp.text import path_of, uri_of
from nyzhi.jsonrpc import Connection, ContentLength, PeerGone

CONVERTER = converters.get_converter()
SETTLE = 0.3  # seconds without a new publish that end a wait for an unversioned server
MAX_SETTLE = 1.0  # ... at most (a first answer slowed by loading the project says nothing)


class _Doc:
    __slots__ = ("text", "version")

    def __init__(self, text: str) -> None:
        self.text = text
        self.version = 1


class _Published:
    __slots__ = ("items", "seq", "version")

    def __init__(self, items: list[lsp.Diagnostic], version: int | None, seq: int) -> None:
        self.items = items
        self.version = version
        self.seq = seq


class LspClient:
    """Requests to one server; documents kept in sync with what the agent wrote."""

    def __init__(self, choice: ServerChoice, root: Path, config: Any = None) -> None:
        self.choice = choice
        self.root = root
        self.config = config
        self.rpc: Connection | None = None
        self.capabilities: lsp.ServerCapabilities | None = None
        self.docs: dict[str, _Doc] = {}
        self.diagnostics: dict[str, _Published] = {}
        self.seq = 0  # bumped by every publishDiagnostics: "published after X"
        self._published = trio.Event()
        self._sync_lock = trio.Lock()

    # -- wiring ------------------------------------------------------------------------------
    def connect(self, send: trio.abc.SendStream, receive: trio.abc.ReceiveStream) -> Connection:
        """JSON-RPC with ``Content-Length`` framing on the server's stdin/stdout. Every
        request from the server is answered (``_on_request``, ``None`` for what nyz does not
        handle); notifications are read in order (``_on_notify``: diagnostics)."""
        self.rpc = Connection(
            send, receive, ContentLength(), peer="the language server",
            methods=lambda method: lambda params: self._on_request(method, params),
            notifications=lambda method: lambda params: self._on_notify(method, params),
            cancel_method="$/cancelRequest")
        return self.rpc

    async def read(self) -> None:
        """The server's output, until it ends: it exited, crashed or was killed, or sent what
        cannot be read. Always raises ``PeerGone`` saying which (what was pending failed)."""
        assert self.rpc is not None
        gone: PeerGone = await self.rpc.serve()
        raise gone

    def _on_notify(self, method: str, params: Any) -> None:
        if method != lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS:
            return
        try:
            note = CONVERTER.structure(params, lsp.PublishDiagnosticsParams)
        except Exception:
            return
        self.seq += 1
        uri = _normal_uri(note.uri)
        self.diagnostics[uri] = _Published(list(note.diagnostics), note.version, self.seq)
        self._published.set()
        self._published = trio.Event()

    async def _on_request(self, method: str, params: Any) -> Any:
        if method == lsp.WORKSPACE_CONFIGURATION:
            items = (params or {}).get("items") or []
            return [self._setting(item.get("section")) for item in items]
        if method == lsp.WORKSPACE_WORKSPACE_FOLDERS:
            return [{"uri": uri_of(self.root), "name": self.root.name}]
        if method == lsp.WORKSPACE_APPLY_EDIT:
            # Edits reach files only through nyz's write path (lsp_rename), never this way.
            return {"applied": False, "failureReason": "nyz applies edits itself"}
        return None  # registerCapability, workDoneProgress/create, showMessageRequest, ...

    def _setting(self, section: str | None) -> Any:
        settings = self.choice.settings
        if not section:
            return settings or None
        if section in settings:
            return settings[section]
        node: Any = settings
        for part in section.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    # -- requests ----------------------------------------------------------------------------
    async def call(self, method: str, params: Any, limit: float = math.inf) -> Any:
        """``method`` with an lsprotocol params object; the result as lsprotocol types."""
        assert self.rpc is not None
        raw = await self.rpc.request(method, CONVERTER.unstructure(params), limit=limit)
        response_type = lsp.METHOD_TO_TYPES[method][1]
        return CONVERTER.structure({"jsonrpc": "2.0", "id": 0, "result": raw},
                                   response_type).result

    async def initialize(self, pid: int | None, limit: float) -> None:
        folder = lsp.WorkspaceFolder(uri=uri_of(self.root), name=self.root.name)
        caps = lsp.ClientCapabilities(
            general=lsp.GeneralClientCapabilities(
                position_encodings=[lsp.PositionEncodingKind.Utf16]),
            text_document=lsp.TextDocumentClientCapabilities(
                synchronization=lsp.TextDocumentSyncClientCapabilities(did_save=True),
                publish_diagnostics=lsp.PublishDiagnosticsClientCapabilities(
                    version_support=True),
                definition=lsp.DefinitionClientCapabilities(link_support=True),
                references=lsp.ReferenceClientCapabilities(),
                hover=lsp.HoverClientCapabilities(
                    content_format=[lsp.MarkupKind.PlainText, lsp.MarkupKind.Markdown]),
                rename=lsp.RenameClientCapabilities(prepare_support=False),
                document_symbol=lsp.DocumentSymbolClientCapabilities(
                    hierarchical_document_symbol_support=True),
            ),
            window=lsp.WindowClientCapabilities(work_done_progress=True),
            workspace=lsp.WorkspaceClientCapabilities(
                configuration=True, workspace_folders=True, apply_edit=False,
                workspace_edit=lsp.WorkspaceEditClientCapabilities(document_changes=True),
                symbol=lsp.WorkspaceSymbolClientCapabilities(),
            ),
        )
        params = lsp.InitializeParams(
            process_id=pid, root_uri=uri_of(self.root), root_path=str(self.root),
            capabilities=caps, workspace_folders=[folder],
            initialization_options=self.choice.initialization_options or None,
            client_info=lsp.ClientInfo(name="nyzhi"),
        )
        result = await self.call(lsp.INITIALIZE, params, limit=limit)
        self.capabilities = result.capabilities
        assert self.rpc is not None
        await self.rpc.notify(lsp.INITIALIZED, {})
        if self.choice.settings:
            await self.rpc.notify(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION,
                                  {"settings": self.choice.settings})

    async def shutdown(self, grace: float = 2.0) -> None:
        assert self.rpc is not None
        with trio.move_on_after(grace):
            await self.rpc.request(lsp.SHUTDOWN, None)
            await self.rpc.notify(lsp.EXIT, None)

    # -- documents ---------------------------------------------------------------------------
    async def sync(self, path: Path, text: str, *, save: bool = False) -> int:
        """Tell the server ``path`` holds ``text`` (open it, or send the change); with
        ``save`` also that it was saved. Returns the ``seq`` before the change, for
        ``wait_diagnostics``; -1 when nothing was sent (the server already had this text)."""
        assert self.rpc is not None
        uri = uri_of(path)
        async with self._sync_lock:
            doc = self.docs.get(uri)
            before = self.seq
            if doc is None:
                language = language_of(path, self.config) or self.choice.languages[0]
                self.docs[uri] = _Doc(text)
                await self.rpc.notify(lsp.TEXT_DOCUMENT_DID_OPEN, {"textDocument": {
                    "uri": uri, "languageId": language, "version": 1, "text": text}})
            elif doc.text != text:
                doc.version += 1
                doc.text = text
                await self.rpc.notify(lsp.TEXT_DOCUMENT_DID_CHANGE, {
                    "textDocument": {"uri": uri, "version": doc.version},
                    "contentChanges": [{"text": text}]})
            else:
                return -1
            if save:
                await self.rpc.notify(lsp.TEXT_DOCUMENT_DID_SAVE, {"textDocument": {"uri": uri}})
            return before

    async def close(self, path: Path) -> None:
        """The file is gone: the server forgets the document, nyz its diagnostics."""
        assert self.rpc is not None
        uri = uri_of(path)
        async with self._sync_lock:
            if self.docs.pop(uri, None) is not None:
                await self.rpc.notify(lsp.TEXT_DOCUMENT_DID_CLOSE, {"textDocument": {"uri": uri}})
            self.diagnostics.pop(uri, None)

    def version(self, path: Path) -> int | None:
        doc = self.docs.get(uri_of(path))
        return doc.version if doc else None

    async def wait_diagnostics(self, path: Path, after: int, within: float) -> bool:
        """Until the server publishes diagnostics for ``path`` later than ``after`` (a ``seq``)
        for its current version; False if ``within`` seconds passed first.

        A server that says which version it checked (pyright) is done with its first answer
        for the current version. One that does not (typescript-language-server publishes
        syntax, then semantic, then suggestion diagnostics, each as it comes) is taken as done
        when ``SETTLE`` seconds (or, if longer, as long as its first answer took, up to
        ``MAX_SETTLE``) pass without another publish for the file."""
        uri = uri_of(path)
        start = trio.current_time()
        deadline = start + within
        with trio.move_on_at(deadline):
            while True:
                got = self.diagnostics.get(uri)
                doc = self.docs.get(uri)
                if got is not None and got.seq > after:
                    if got.version is not None and doc is not None and got.version >= doc.version:
                        return True
                    if got.version is None:
                        break
                await self._published.wait()
        if trio.current_time() >= deadline:
            return False
        # Unversioned: until the file's publishes settle (or the deadline). A loaded machine
        # is slow for the later kinds too: the quiet needed grows with the first answer's time.
        quiet = min(max(SETTLE, trio.current_time() - start), MAX_SETTLE)
        while True:
            last = self.diagnostics[uri].seq
            with trio.move_on_at(min(deadline, trio.current_time() + quiet)):
                while self.diagnostics[uri].seq == last:
                    await self._published.wait()
                continue
            return True

    def diagnostics_of(self, path: Path) -> list[lsp.Diagnostic] | None:
        got = self.diagnostics.get(uri_of(path))
        return None if got is None else got.items

    def all_diagnostics(self) -> dict[Path, list[lsp.Diagnostic]]:
        return {path_of(uri): got.items for uri, got in self.diagnostics.items() if got.items}


def _normal_uri(uri: str) -> str:
    """Servers spell URIs their own way (``file:///a%3A``, ``file:///A``); use ours."""
    try:
        return uri_of(path_of(uri))
    except ValueError:
        return uri
