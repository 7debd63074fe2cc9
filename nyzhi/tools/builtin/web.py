"""web_fetch: GET a URL and return readable text.

HTML becomes text with the standard library's parser: scripts, styles and other non-content
elements are dropped, block elements become line breaks so headings, paragraphs and list items
stay apart, and whitespace is collapsed. The download is capped (a huge page cannot exhaust
memory) and the text is cut at ``max_length`` characters.
"""

from __future__ import annotations

import contextlib
import functools
import re
import urllib.parse
from typing import Any

import attrs

from nyzhi.tools.base import Permission, ToolContext, ToolResult
from nyzhi.tools.builtin.common import ArgError, BuiltinTool, error, opt_int, req_str
from nyzhi.tools.untrusted import frame_untrusted

DEFAULT_MAX_LENGTH = 50_000
MAX_DOWNLOAD_BYTES = 5 * 1024 * 1024
TIMEOUT_S = 30.0
MAX_REDIRECTS = 10  # each one checked (nyzhi.tools.netguard) before it is followed
USER_AGENT = "nyzhi-web-fetch/0.1"

_SKIP = {"script", "style", "noscript", "template", "svg", "head", "iframe"}
_BLOCK = {
    "p", "div", "section", "article", "header", "footer", "nav", "aside", "main", "br", "hr",
    "h1", "h2", "h3", "h4", "h5", "h6", "li", "ul", "ol", "table", "tr", "pre", "blockquote",
    "title", "dd", "dt", "dl", "form", "figure", "figcaption",
}
_VOID = {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "wbr"}


@functools.cache
def _text_extractor() -> type:
    """The parser class, made at the first fetch: ``html.parser`` (with ``html.entities``) costs
    ~2 ms to import, on every start-up that registers this tool, and most runs fetch nothing."""
    import html.parser

    class _TextExtractor(html.parser.HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.parts: list[str] = []
            self.skip_depth = 0
            self.pre_depth = 0
            self.title = ""
            self._in_title = False

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag == "title":
                self._in_title = True
            if tag in _SKIP and tag not in _VOID:
                self.skip_depth += 1
            if tag == "pre":
                self.pre_depth += 1
            if tag in _BLOCK:
                self.parts.append("\n")
            if tag == "li":
                self.parts.append("- ")
            if tag in ("td", "th"):
                self.parts.append(" | ")

        def handle_endtag(self, tag: str) -> None:
            if tag == "title":
                self._in_title = False
            if tag in _SKIP and self.skip_depth:
                self.skip_depth -= 1
            if tag == "pre" and self.pre_depth:
                self.pre_depth -= 1
            if tag in _BLOCK:
                self.parts.append("\n")

        def handle_data(self, data: str) -> None:
            if self._in_title:
                self.title += data
            if self.skip_depth:
                return
            if self.pre_depth:
                self.parts.append(data)
            else:
                self.parts.append(re.sub(r"\s+", " ", data))

    return _TextExtractor


def html_to_text(markup: str) -> tuple[str, str]:
    """(title, text) of an HTML document."""
    parser = _text_extractor()()
    parser.feed(markup)
    parser.close()
    text = "".join(parser.parts)
    lines = [ln.strip() if not ln.startswith("    ") else ln.rstrip() for ln in text.split("\n")]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return parser.title.strip(), text


def net_policy(ctx: ToolContext) -> Any:
    """The run's policy for model-directed requests (``ToolContext.net``), else the strict
    default (nothing private, no allowed hosts), with the run's redactor."""
    from nyzhi.tools.netguard import NetPolicy

    policy = ctx.net if ctx.net is not None else NetPolicy()
    if policy.redactor is None and ctx.redactor:
        policy = attrs.evolve(policy, redactor=ctx.redactor)
    return policy


async def _fetch(client: Any, url: str, policy: Any) -> tuple[int, str, str, str, bytes, bool]:
    """GET ``url``, following redirects here (each hop checked by ``policy`` and connected to
    the address the check resolved, never resolved again): (status, content type, encoding,
    final URL, body cut at ``MAX_DOWNLOAD_BYTES``, whether it was cut)."""
    from nyzhi.tools.netguard import Refused, host_header, pinned_url

    for _hop in range(MAX_REDIRECTS + 1):
        target = await policy.check_url(url)
        last: Exception | None = None
        for address in target.addresses[:3]:
            request = client.build_request(
                "GET", pinned_url(target, address), headers={"Host": host_header(target)},
                extensions={"sni_hostname": target.host} if target.scheme == "https" else {})
            try:
                resp = await client.send(request, stream=True)
                break
            except httpx_connect_errors() as exc:  # the next address of the name
                last = exc
        else:
            assert last is not None
            raise last
        try:
            location = resp.headers.get("location")
            if resp.is_redirect and location:
                url = urllib.parse.urljoin(url, location)
                continue
            body = bytearray()
            capped = False
            async with contextlib.aclosing(resp.aiter_bytes()) as chunks:
                async for chunk in chunks:
                    body.extend(chunk)
                    if len(body) > MAX_DOWNLOAD_BYTES:
                        capped = True
                        del body[MAX_DOWNLOAD_BYTES:]
                        break
            return (resp.status_code, resp.headers.get("content-type", ""),
                    resp.charset_encoding or "utf-8", url, bytes(body), capped)
        finally:
            await resp.aclose()
    raise Refused(f"more than {MAX_REDIRECTS} redirects; stopped at {url}")


def httpx_connect_errors() -> tuple[type[Exception], ...]:
    import httpx

    return (httpx.ConnectError, httpx.ConnectTimeout)


class WebFetchTool(BuiltinTool):
    name = "web_fetch"
    description = (
        "Fetch a page or file over http(s) with GET and return it as text; HTML becomes "
        "readable text with headings and lists kept. Use it to read documentation or a page the "
        "user points to. Downloads stop at 5 MB, text is cut at max_length, the request times "
        "out after 30 s, and non-text content (images, archives) is refused."
    )
    permission = Permission.NEEDS_APPROVAL
    parameters = {
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "An http:// or https:// URL."},
            "max_length": {"type": "integer", "description": "Maximum characters to return (default 50000)."},
        },
        "required": ["url"],
    }

    def target_paths(self, args: dict[str, Any]) -> list[str]:
        return []

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        import httpx  # heavy-ish; only when fetching

        from nyzhi.tools.netguard import Refused, SecretInUrl

        url = req_str(args, "url").strip()
        if not re.match(r"^https?://", url, re.IGNORECASE):
            raise ArgError(f"url must start with http:// or https://, got {url!r}")
        max_length = opt_int(args, "max_length", DEFAULT_MAX_LENGTH, minimum=1)
        try:
            async with httpx.AsyncClient(
                follow_redirects=False, timeout=TIMEOUT_S,
                headers={"User-Agent": USER_AGENT},
            ) as client:
                status, ctype, encoding, final_url, body, capped = await _fetch(
                    client, url, net_policy(ctx))
        except SecretInUrl as exc:  # the URL is not repeated: it is what carries the secret
            return error(f"web_fetch refused: {exc}")
        except Refused as exc:
            return error(f"web_fetch {url} refused: {exc}")
        except httpx.HTTPError as exc:
            return error(
                f"web_fetch {url} failed: {type(exc).__name__}: {exc}. Check the URL; the site "
                "may be down or unreachable from here (a sandbox may block the network)."
            )
        meta: dict[str, Any] = {"status": status, "content_type": ctype, "url": final_url}
        mime = ctype.split(";")[0].strip().lower()
        textual = mime.startswith("text/") or mime in ("application/json", "application/xml", "application/xhtml+xml", "application/javascript", "") or mime.endswith("+json") or mime.endswith("+xml")
        if not textual:
            return error(f"{final_url} returned {mime} ({len(body)} bytes), which is not text", **meta)
        try:
            text = bytes(body).decode(encoding, "replace")
        except LookupError:
            text = bytes(body).decode("utf-8", "replace")
        title = ""
        if "html" in mime or (not mime and "<html" in text[:1000].lower()):
            title, text = html_to_text(text)
        total = len(text)
        if total > max_length:
            text = text[:max_length] + f"\n... (truncated: {total - max_length} more characters; raise max_length to see more)"
        header = f"URL: {final_url}\nStatus: {status}" + (f"\nTitle: {title}" if title else "")
        if capped:
            header += f"\n(download stopped at {MAX_DOWNLOAD_BYTES} bytes)"
        # The page's text is the web's, not the user's: framed so instructions in it stay data.
        result = ToolResult(output=f"{header}\n\n{frame_untrusted(final_url, text)}",
                            metadata=meta)
        if status >= 400:
            result.is_error = True
        return result


TOOLS = (WebFetchTool,)
