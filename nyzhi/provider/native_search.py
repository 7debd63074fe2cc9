"""Web search with the model's own key: the provider's server-side search tool.

Anthropic (the ``web_search_20250305`` server tool), OpenAI Responses (the ``web_search``
tool) and Gemini (Google Search grounding, ``google_search``) search the web inside a model
call, with the key the user already gave. When no ``[web_search]`` backend is configured and
the session's provider is one of those, the ``web_search`` tool asks it: one non-streamed call
whose only job is the search, read back as hits (title, URL, and the text the answer cited
from it) plus the answer's own summary. The tool frames all of it as untrusted, as it does a
search API's results.

Each wire's documented shape is read here and nowhere else:

* Anthropic: ``web_search_tool_result`` blocks (``web_search_result``: ``url``, ``title``,
  ``page_age``), or their ``web_search_tool_result_error`` (``error_code``); the ``text``
  blocks' ``citations`` (``web_search_result_location``: ``url``, ``title``, ``cited_text``);
* OpenAI Responses: the ``message`` item's ``output_text`` with ``url_citation`` annotations
  (``url``, ``title``, ``start_index``, ``end_index`` into the text);
* Gemini: ``candidates[0].groundingMetadata``: ``groundingChunks[].web`` (``uri``, ``title``)
  and ``groundingSupports[]`` (``segment.text``, ``groundingChunkIndices``).
"""

from __future__ import annotations

import contextlib
from typing import Any

from nyzhi import records
from nyzhi.config.modes import ApiStyle

#: The wire formats whose providers search on their side.
SEARCHING_STYLES = frozenset({ApiStyle.ANTHROPIC, ApiStyle.OPENAI_RESPONSES, ApiStyle.GEMINI})
ANTHROPIC_TOOL = "web_search_20250305"
TIMEOUT_S = 60.0
MAX_ANSWER_BYTES = 2 * 1024 * 1024
MAX_TOKENS = 1024


class NativeSearchFailed(Exception):
    """The provider refused or answered something unreadable; the message says which."""


@records.frozen
class Found:
    title: str
    url: str
    cited: str = ""  # what the answer quoted from the page (Anthropic, OpenAI, Gemini)


@records.frozen
class NativeAnswer:
    hits: tuple[Found, ...]
    summary: str  # the model's own text about the results


def offers_search(spec: Any) -> bool:
    return spec is not None and getattr(spec, "api_style", None) in SEARCHING_STYLES


def _prompt(query: str, count: int) -> str:
    return (f"Search the web for: {query}\nReport the {count} most relevant results, one "
            "short line each, citing each source.")


def request(spec: Any, query: str, count: int) -> tuple[str, dict[str, Any]]:
    """(url, JSON body) of the one search call for ``spec``'s wire format."""
    text = _prompt(query, count)
    if spec.api_style == ApiStyle.ANTHROPIC:
        return f"{spec.base_url}/messages", {
            "model": spec.model, "max_tokens": MAX_TOKENS,
            "messages": [{"role": "user", "content": text}],
            "tools": [{"type": ANTHROPIC_TOOL, "name": "web_search", "max_uses": 1}],
        }
    if spec.api_style == ApiStyle.OPENAI_RESPONSES:
        return f"{spec.base_url}/responses", {
            "model": spec.model, "input": text, "tools": [{"type": "web_search"}],
            "max_output_tokens": MAX_TOKENS,
        }
    if spec.api_style == ApiStyle.GEMINI:
        return f"{spec.base_url}/models/{spec.model}:generateContent", {
            "contents": [{"role": "user", "parts": [{"text": text}]}],
            "tools": [{"google_search": {}}],
        }
    raise NativeSearchFailed(f"{spec.api_style} providers have no server-side web search")


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _add(found: dict[str, Found], url: Any, title: Any, cited: Any = "") -> None:
    url, title, cited = _s(url), _s(title), _s(cited)
    if not url.startswith(("https://", "http://")):
        return
    old = found.get(url)
    if old is None:
        found[url] = Found(title, url, cited)
    elif cited and not old.cited:
        found[url] = Found(old.title or title, url, cited)


def parse(style: str, data: Any) -> NativeAnswer:
    """Hits and summary from one answer of ``style``'s wire format."""
    if not isinstance(data, dict):
        raise NativeSearchFailed("the answer is not a JSON object")
    found: dict[str, Found] = {}
    texts: list[str] = []
    if style == ApiStyle.ANTHROPIC:
        for block in data.get("content") or ():
            if not isinstance(block, dict):
                continue
            if block.get("type") == "web_search_tool_result":
                content = block.get("content")
                if isinstance(content, dict):  # web_search_tool_result_error
                    raise NativeSearchFailed(f"the provider's search failed "
                                             f"({_s(content.get('error_code')) or 'error'})")
                for row in content or ():
                    if isinstance(row, dict) and row.get("type") == "web_search_result":
                        _add(found, row.get("url"), row.get("title"))
            elif block.get("type") == "text":
                texts.append(_s(block.get("text")))
                for cite in block.get("citations") or ():
                    if isinstance(cite, dict):
                        _add(found, cite.get("url"), cite.get("title"), cite.get("cited_text"))
    elif style == ApiStyle.OPENAI_RESPONSES:
        for item in data.get("output") or ():
            if not isinstance(item, dict) or item.get("type") != "message":
                continue
            for part in item.get("content") or ():
                if not isinstance(part, dict) or part.get("type") != "output_text":
                    continue
                text = _s(part.get("text"))
                texts.append(text)
                for note in part.get("annotations") or ():
                    if isinstance(note, dict) and note.get("type") == "url_citation":
                        start, end = note.get("start_index"), note.get("end_index")
                        cited = (text[start:end] if isinstance(start, int)
                                 and isinstance(end, int) else "")
                        _add(found, note.get("url"), note.get("title"), cited)
    elif style == ApiStyle.GEMINI:
        candidates = data.get("candidates") or [{}]
        first = candidates[0] if isinstance(candidates[0], dict) else {}
        for part in (first.get("content") or {}).get("parts") or ():
            if isinstance(part, dict):
                texts.append(_s(part.get("text")))
        meta = first.get("groundingMetadata") or {}
        chunks = [c.get("web") or {} if isinstance(c, dict) else {}
                  for c in meta.get("groundingChunks") or ()]
        cited_by: dict[int, str] = {}
        for support in meta.get("groundingSupports") or ():
            if not isinstance(support, dict):
                continue
            segment = _s((support.get("segment") or {}).get("text"))
            for index in support.get("groundingChunkIndices") or ():
                if isinstance(index, int) and segment:
                    cited_by.setdefault(index, segment)
        for i, web in enumerate(chunks):
            if isinstance(web, dict):
                _add(found, web.get("uri"), web.get("title"), cited_by.get(i, ""))
    return NativeAnswer(tuple(found.values()), "\n".join(t for t in texts if t).strip())


async def search(spec: Any, client: Any, query: str, count: int) -> NativeAnswer:
    """One search through ``spec``'s provider on ``client`` (the provider's own)."""
    import json

    import httpx

    from nyzhi.provider.spec import auth_headers

    url, body = request(spec, query, count)
    headers = {**auth_headers(spec), "content-type": "application/json"}
    try:
        async with client.stream("POST", url, headers=headers, json=body,
                                 timeout=TIMEOUT_S) as response:
            raw = bytearray()
            async with contextlib.aclosing(response.aiter_bytes()) as chunks:
                async for chunk in chunks:
                    raw += chunk
                    if len(raw) > MAX_ANSWER_BYTES:
                        raise NativeSearchFailed(f"the answer is over {MAX_ANSWER_BYTES} bytes")
            status = response.status_code
    except httpx.HTTPError as exc:
        raise NativeSearchFailed(f"the request failed ({type(exc).__name__})") from None
    try:
        data = json.loads(bytes(raw))
    except ValueError:
        raise NativeSearchFailed(f"HTTP {status}, and the answer is not JSON") from None
    if status != 200:
        error = data.get("error") if isinstance(data, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        raise NativeSearchFailed(f"HTTP {status}" + (f": {_s(message)[:300]}" if message else ""))
    return parse(spec.api_style, data)
