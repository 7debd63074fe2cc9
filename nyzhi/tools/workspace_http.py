"""Workspace files for the browser, served over loopback HTTP instead of ``file://``.

Why: a page Chromium loads from ``file://`` may frame or embed any other ``file://`` URL, and
the frame is drawn: a workspace page with ``<iframe src="file:///home/me/.ssh/id_ed25519">``
would put the key in a screenshot. A page from ``http://127.0.0.1`` cannot load ``file://``
at all (Chromium refuses it), so the browser tools never give Chromium a ``file://`` URL: a
workspace file is opened as ``http://127.0.0.1:PORT/TOKEN/path``, from this server, which
answers only for files that resolve inside the workspace (a symlink out of it is refused).

``TOKEN`` is 128 random bits per workspace, so another local user cannot read the workspace
through the port. A masked credential file (``nyzhi.tools.credentials``: a workspace at HOME
holds ``~/.ssh``) is never served. The server lives as long as the browser (it runs in the
browser actor), and its port is the one loopback port the browser's pages may reach
(``nyzhi.tools.browser_guard``).
"""

from __future__ import annotations

import mimetypes
import secrets
import urllib.parse
from pathlib import Path

import trio

from nyzhi.loopback import header_lines, security_headers

MAX_REQUEST = 16 * 1024


async def read_request_line(stream: trio.abc.ReceiveStream, *, limit: int = MAX_REQUEST,
                            timeout: float = 30) -> list[str] | None:  # noqa: ASYNC109
    """The words of the request line of one HTTP/1.x request on ``stream``, reading its head
    bounded in size and time (nyz's loopback responders: this file server, the OAuth
    login's redirect); None when the peer closed before the head ended."""
    data = b""
    with trio.move_on_after(timeout):
        while b"\r\n\r\n" not in data and len(data) < limit:
            chunk = await stream.receive_some(4096)
            if not chunk:
                return None
            data += chunk
    return data.split(b"\r\n", 1)[0].decode("latin-1").split(" ")


class WorkspaceFiles:
    """The served roots, by token; ``url`` for a file, ``serve`` as a ``trio.serve_tcp``
    handler."""

    def __init__(self) -> None:
        self.base: str | None = None  # http://127.0.0.1:PORT once serving
        self._roots: dict[str, Path] = {}
        self._tokens: dict[Path, str] = {}

    def url(self, root: Path, path: Path) -> str:
        """The URL of ``path`` (inside ``root``) while the server runs."""
        assert self.base is not None, "the workspace file server is not running"
        root = root.resolve()
        token = self._tokens.get(root)
        if token is None:
            token = secrets.token_hex(16)
            self._tokens[root], self._roots[token] = token, root
        rel = path.resolve().relative_to(root).as_posix()
        return f"{self.base}/{token}/{urllib.parse.quote(rel if rel != '.' else '')}"

    def _file(self, target: str) -> Path | None:
        """The file a request path names, or None (unknown token, outside the root, missing)."""
        parts = urllib.parse.urlsplit(target).path.lstrip("/").split("/", 1)
        root = self._roots.get(parts[0])
        if root is None:
            return None
        rel = urllib.parse.unquote(parts[1] if len(parts) > 1 else "")
        try:
            found = (root / rel).resolve()
            found.relative_to(root)
        except (ValueError, OSError):
            return None
        if found.is_dir():
            found = found / "index.html"
        from nyzhi.tools.credentials import credential_kind

        if credential_kind(found) is not None:
            return None
        return found if found.is_file() else None

    async def serve(self, stream: trio.SocketStream) -> None:
        line = await read_request_line(stream)
        if line is None:
            return
        status, body, ctype = "404 Not Found", b"not found", "text/plain"
        if len(line) == 3 and line[0] in ("GET", "HEAD"):
            found = await trio.to_thread.run_sync(self._file, line[1])
            if found is not None:
                try:
                    body = await trio.Path(found).read_bytes()
                    status = "200 OK"
                    ctype = mimetypes.guess_type(found.name)[0] or "application/octet-stream"
                except OSError:
                    pass
        elif len(line) == 3:
            status, body = "405 Method Not Allowed", b"GET only"
        # The one loopback header set, without a CSP (the pages are the user's own app,
        # scripts and all) and framed only by workspace pages; no Referer carries the token.
        shared = header_lines(security_headers(csp=None, frames="SAMEORIGIN"))
        head = (f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                f"{shared}Connection: close\r\n\r\n").encode()
        try:
            await stream.send_all(head + (body if line[0] != "HEAD" else b""))
            await stream.aclose()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
