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


def http_error(
    status: int, body: bytes, *, provider: str, model: str, retry_after: float | None = None
) -> ProviderError:
    """Map an HTTP error answer to the right class of the tree."""
    message = extract_error_message(body)
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
