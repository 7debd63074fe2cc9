"""Every error a provider raises, in one tree, so callers catch exactly what they can act on.

::

    ProviderError                    base: .provider, .model, .status (HTTP status or None)
    ├── ProviderHTTPError            a non-retryable HTTP answer (4xx other than 408/429)
    │   ├── BadRequestError          400 / 422: the request itself is wrong
    │   ├── AuthenticationError      401: missing or invalid key
    │   ├── PermissionDeniedError    403: the key may not use this model/endpoint
    │   └── NotFoundError            404: wrong base_url or unknown model
    ├── RateLimitError               429 after the retries (or Retry-After beyond the cap)
    ├── ServerError                  5xx after the retries
    ├── ProviderConnectionError      connect/read failures and timeouts after the retries
    ├── ContextOverflowError         the request is longer than the model's context window
                                     (an HTTP 400 or an in-stream error): compact and retry,
                                     never retried as is; .tokens/.limit when the provider
                                     names them
    └── ProviderStreamError          the stream itself went wrong
        ├── StreamEndedEarly         it ended before the model's stop (retried like a 5xx)
        └── StreamInterrupted        it failed AFTER output was already yielded: never retried,
                                     because restarting would show the user duplicate output

The provider's own message (extracted from its JSON error body) is part of ``str(error)``;
the original httpx exception, when there is one, is kept as ``__cause__``. ``retryable``
says whether the streaming loop may try again; the classes raised to callers after the
retries are exhausted still carry it so a caller can decide to retry later itself.
"""

from __future__ import annotations

import json
import re
from typing import Any


class ProviderError(Exception):
    """A model call failed. The message names provider, model, status and the provider's words."""

    retryable = False

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        model: str = "",
        status: int | None = None,
        provider_message: str | None = None,
    ) -> None:
        self.provider = provider
        self.model = model
        self.status = status
        self.provider_message = provider_message
        self.detail = message
        super().__init__(self._render())

    def _render(self) -> str:
        where = ", ".join(
            part
            for part in (
                f"provider {self.provider!r}" if self.provider else "",
                f"model {self.model!r}" if self.model else "",
                f"HTTP {self.status}" if self.status is not None else "",
            )
            if part
        )
        text = self.detail
        if self.provider_message and self.provider_message not in text:
            text = f"{text}: {self.provider_message}"
        return f"{text} ({where})" if where else text


class ProviderHTTPError(ProviderError):
    """A 4xx answer that retrying cannot fix."""


class BadRequestError(ProviderHTTPError):
    pass


class AuthenticationError(ProviderHTTPError):
    pass


class PermissionDeniedError(ProviderHTTPError):
    pass


class NotFoundError(ProviderHTTPError):
    pass


class RateLimitError(ProviderError):
    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: object) -> None:
        self.retry_after = retry_after
        super().__init__(message, **kw)  # type: ignore[arg-type]


class ServerError(ProviderError):
    retryable = True


class ProviderConnectionError(ProviderError):
    retryable = True


class ContextOverflowError(ProviderError):
    """The prompt does not fit the model's context window.

    Its own kind (not a ``BadRequestError``) because the remedy is the caller's: compact the
    thread and send the step again. ``tokens`` and ``limit`` are the provider's own figures
    (the prompt's size and the window) when its message names them, else None.
    """

    def __init__(
        self, message: str, *, tokens: int | None = None, limit: int | None = None, **kw: Any
    ) -> None:
        self.tokens = tokens
        self.limit = limit
        super().__init__(message, **kw)


class ProviderStreamError(ProviderError):
    """An error inside a 200 stream: an ``error`` event, or a stream that stops making sense.

    ``retryable`` is per instance: an Anthropic ``overloaded_error`` event is worth a retry,
    an ``invalid_request_error`` event is not.
    """

    def __init__(self, message: str, *, retryable: bool = False, **kw: object) -> None:
        self.retryable = retryable
        super().__init__(message, **kw)  # type: ignore[arg-type]


class StreamEndedEarly(ProviderStreamError):
    def __init__(self, message: str, **kw: object) -> None:
        super().__init__(message, retryable=True, **kw)


class StreamInterrupted(ProviderStreamError):
    def __init__(self, message: str, **kw: object) -> None:
        super().__init__(message, retryable=False, **kw)


_HINTS = {
    400: "the provider rejected the request",
    401: "the API key was rejected; check the key or run `nyz login`",
    403: "the API key is not allowed to use this model or endpoint",
    404: "not found; check base_url and the model name",
    422: "the provider rejected the request",
}


def extract_error_message(body: bytes) -> str | None:
    """The provider's own words from an error body, whichever of the usual shapes it uses.

    OpenAI/Gemini/Anthropic: ``{"error": {"message": ...}}``; Ollama: ``{"error": "..."}``;
    some proxies: ``{"message": ...}`` or a JSON list of those. Falls back to the raw text.
    """
    text = body.decode("utf-8", errors="replace").strip()
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return text[:500]
    if isinstance(data, list) and data:
        data = data[0]
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, str):
            return err
        if isinstance(err, dict):
            msg = err.get("message") or err.get("msg")
            kind = err.get("type") or err.get("status") or err.get("code")
            if isinstance(msg, str):
                return f"{kind}: {msg}" if isinstance(kind, str) and kind else msg
    return text[:500]


# How each wire format says "the prompt is too long", from the providers' API references and
# the errors they are seen to send. Each pattern names the prompt's size and the window when
# the message carries them (group names ``tokens`` and ``limit``).
_OVERFLOW_FIGURES = (
    # Anthropic: "prompt is too long: 208310 tokens > 200000 maximum"
    re.compile(r"prompt is too long: (?P<tokens>\d+) tokens > (?P<limit>\d+) maximum", re.I),
    # OpenAI Chat (and vLLM): "This model's maximum context length is 8192 tokens. However,
    # your messages resulted in 8227 tokens" / "you requested 9000 tokens (8000 in the
    # messages, 1000 in the completion)"
    re.compile(r"maximum context length is (?P<limit>\d+) tokens.*?(?:resulted in|requested) "
               r"(?P<tokens>\d+) tokens(?: \((?P<messages>\d+) in the messages)?", re.I | re.S),
    # Gemini: "The input token count (1200293) exceeds the maximum number of tokens allowed
    # (1048576)."
    re.compile(r"input token count \((?P<tokens>\d+)\) exceeds the maximum number of tokens "
               r"allowed \((?P<limit>\d+)\)", re.I),
    # llama.cpp server: "request (4476 tokens) exceeds the available context size (4096 tokens)"
    re.compile(r"\((?P<tokens>\d+) tokens\) exceeds the available context size "
               r"\((?P<limit>\d+) tokens\)", re.I),
)
# Overflow messages without figures: OpenAI Responses ("Your input exceeds the context window
# of this model"), Ollama ("input length exceeds the context length"), and the error codes.
_OVERFLOW_WORDS = re.compile(
    r"context_length_exceeded|exceed_context_size|prompt is too long|maximum context length"
    r"|exceeds the context (?:window|length|size)|input token count \(\d+\) exceeds"
    r"|exceeds the available context size", re.I)


def overflow_figures(text: str) -> tuple[bool, int | None, int | None]:
    """Whether ``text`` (a provider's error message or code) says the prompt overflowed the
    context window, and the prompt's size and the window in tokens when it names them."""
    for pattern in _OVERFLOW_FIGURES:
        m = pattern.search(text)
        if m:
            found = m.groupdict()
            tokens = int(found.get("messages") or found["tokens"])
            return True, tokens, int(found["limit"])
    return bool(_OVERFLOW_WORDS.search(text)), None, None


def _overflow_in_body(body: bytes) -> tuple[bool, int | None, int | None]:
    """``overflow_figures`` over an error body, its codes included (OpenAI's
    ``code: context_length_exceeded``, llama.cpp's ``n_prompt_tokens``/``n_ctx``)."""
    text = body.decode("utf-8", errors="replace")
    found, tokens, limit = overflow_figures(text)
    try:
        data = json.loads(text)
    except ValueError:
        return found, tokens, limit
    err = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, dict):
        n_prompt, n_ctx = err.get("n_prompt_tokens"), err.get("n_ctx")
        if isinstance(n_prompt, int) and isinstance(n_ctx, int):
            return True, n_prompt, n_ctx
    return found, tokens, limit


def overflow_from_stream(error: ProviderError) -> ContextOverflowError | None:
    """The overflow an in-stream error event reports (Anthropic's ``error`` event, OpenAI
    Responses' ``response.failed``), as its own kind; None for any other error."""
    found, tokens, limit = overflow_figures(str(error))
    if not found:
        return None
    out = ContextOverflowError(
        "the prompt is longer than the model's context window", tokens=tokens, limit=limit,
        provider=error.provider, model=error.model, status=error.status,
        provider_message=error.provider_message or error.detail,
    )
    out.__cause__ = error
    return out


def http_error(
    status: int, body: bytes, *, provider: str, model: str, retry_after: float | None = None
) -> ProviderError:
    """Map an HTTP error answer to the right class of the tree."""
    message = extract_error_message(body)
    if status in (400, 413, 422):
        found, tokens, limit = _overflow_in_body(body)
        if found:
            return ContextOverflowError(
                "the prompt is longer than the model's context window", tokens=tokens,
                limit=limit, provider=provider, model=model, status=status,
                provider_message=message,
            )
    kw: dict[str, object] = {
        "provider": provider,
        "model": model,
        "status": status,
        "provider_message": message,
    }
    if status == 429:
        return RateLimitError("rate limited", retry_after=retry_after, **kw)
    if status >= 500 or status == 408:
        return ServerError("the provider had a server error", **kw)
    hint = _HINTS.get(status, "the provider refused the request")
    cls: type[ProviderHTTPError] = {
        400: BadRequestError,
        401: AuthenticationError,
        403: PermissionDeniedError,
        404: NotFoundError,
        422: BadRequestError,
    }.get(status, ProviderHTTPError)
    return cls(hint, **kw)  # type: ignore[arg-type]
