"""OAuth for remote MCP servers: the SDK's ``OAuthClientProvider`` with nyz's rules around it.

The SDK does the protocol (401 -> ``WWW-Authenticate`` resource metadata -> protected
resource metadata -> authorization server metadata -> client ID metadata document or
dynamic registration -> authorization code with PKCE S256 and ``resource`` -> refresh).
nyz adds what the SDK leaves to the application:

* tokens live in ``mcp-auth.json`` (``nyzhi.auth.mcp_tokens``), with an absolute expiry so
  a token that expired while nyz was not running is refreshed before it is sent;
* a connection made outside ``nyz mcp login`` never opens a browser: a server that wants a
  login the user has not done raises ``NeedsLogin``, shown as one line naming the command;
* every request the OAuth flow makes (metadata, registration, token) and the authorization
  URL must be HTTPS or loopback, so a hostile metadata document cannot send the user's
  codes or tokens over plain HTTP to another host (the SDK checks the resource matches
  the server's URL, the issuer, and keeps redirects within the origin).

Imports the SDK: imported only where ``nyzhi.core.runtime.mcp.client`` is.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.shared.auth import OAuthClientMetadata

from nyzhi.auth.mcp_tokens import McpTokenStorage

_LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


class NeedsLogin(Exception):
    """The server wants an OAuth login the user has not done (or that was revoked)."""


class NotOAuth(Exception):
    """A 401 from a server with no OAuth metadata (a missing API key, a wrong URL)."""


class OAuthRefused(Exception):
    """The server's OAuth metadata points somewhere nyz will not send credentials."""


def safe_url(url: str) -> bool:
    """HTTPS anywhere, or plain HTTP to this machine only."""
    parts = urlsplit(str(url))
    return parts.scheme == "https" or (parts.scheme == "http" and (parts.hostname or "") in _LOOPBACK)


def _origin_of(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or {"http": 80, "https": 443}.get(scheme)


def client_secret_of(server: Any, env: Mapping[str, str] | None = None) -> str | None:
    """The secret of a pre-registered confidential client: the value of the variable
    ``client_secret_env`` names (None when unset or not configured)."""
    import os

    name = getattr(server, "client_secret_env", None)
    if not name:
        return None
    return (os.environ if env is None else env).get(name) or None


def login_line(name: str) -> str:
    return f"MCP server {name!r} needs a login: run `nyz mcp login {name}`"


class NyzOAuthProvider(OAuthClientProvider):
    """``OAuthClientProvider`` that refuses unsafe endpoints and never logs in implicitly."""

    def __init__(self, name: str, storage: McpTokenStorage, client_id: str | None = None,
                 client_secret: str | None = None, **kw: Any) -> None:
        super().__init__(storage=storage, **kw)
        self.name = name
        self.storage = storage
        self.client_id = client_id
        # a pre-registered confidential client's secret (from ``client_secret_env``): held in
        # memory only, never in mcp-auth.json (this client is never stored)
        self.client_secret = client_secret or None

    def _secret_method(self) -> str:
        """How a pre-registered confidential client authenticates at the token endpoint: what
        the authorization server metadata supports, ``client_secret_basic`` first (RFC 8414's
        default when the metadata names none)."""
        meta = self.context.oauth_metadata
        supported = (meta.token_endpoint_auth_methods_supported if meta is not None else None) or []
        if "client_secret_post" in supported and "client_secret_basic" not in supported:
            return "client_secret_post"
        return "client_secret_basic"

    def _set_secret_method(self) -> None:
        info = self.context.client_info
        if self.client_secret and info is not None and info.client_id == self.client_id:
            info.token_endpoint_auth_method = self._secret_method()

    async def _initialize(self) -> None:
        await super()._initialize()
        if self.client_id:
            # configured by hand (``client_id``, ``client_secret_env``): used as is, nothing
            # is registered or stored
            from mcp.shared.auth import OAuthClientInformationFull

            self.context.client_info = OAuthClientInformationFull(
                client_id=self.client_id, client_secret=self.client_secret,
                redirect_uris=self.context.client_metadata.redirect_uris,
                token_endpoint_auth_method="none",
                grant_types=["authorization_code", "refresh_token"], response_types=["code"])
        expires_at = self.storage.expires_at()
        if expires_at is not None:
            self.context.token_expiry_time = expires_at
        # The authorization server found at login: a refresh after a restart must go to its
        # token endpoint, not to a guess at the MCP server's origin.
        metadata = self.storage.get_metadata()
        if metadata is not None and self.context.oauth_metadata is None:
            from mcp.shared.auth import OAuthMetadata
            from pydantic import ValidationError

            try:
                self.context.oauth_metadata = OAuthMetadata.model_validate(metadata)
            except ValidationError:
                pass
        self._set_secret_method()

    async def _exchange_token_authorization_code(self, auth_code: str,
                                                 code_verifier: str) -> Any:
        self._set_secret_method()  # the metadata discovered by now says how
        return await super()._exchange_token_authorization_code(auth_code, code_verifier)

    async def _refresh_token(self) -> Any:
        self._set_secret_method()
        return await super()._refresh_token()

    async def _handle_token_response(self, response: Any) -> None:
        await super()._handle_token_response(response)
        if self.context.redirect_handler is not None:
            self.storage.set_wanted_scope(None)  # this login asked for it
        if self.context.oauth_metadata is not None:
            self.storage.set_metadata(self.context.oauth_metadata.model_dump(mode="json",
                                                                             exclude_none=True))

    async def _perform_authorization_code_grant(self) -> tuple[str, str]:
        # The SDK has chosen the scope by now (for a step-up, the granted one and the one the
        # server's 403 asked for). A session cannot ask a person: it records that scope for
        # the login it tells the user to run, which requests it too.
        scope = self.context.client_metadata.scope
        if self.context.redirect_handler is None:
            if scope and self.context.current_tokens is not None:  # a step-up, not a first login
                self.storage.set_wanted_scope(scope)
            raise NeedsLogin(login_line(self.name))
        wanted = self.storage.wanted_scope()
        if wanted:
            from mcp.client.auth.utils import union_scopes

            self.context.client_metadata.scope = union_scopes(scope, wanted)
        return await super()._perform_authorization_code_grant()

    async def _auth_flow(self, request: Any) -> Any:
        flow = super()._auth_flow(request)
        refreshed = False
        try:
            outgoing = await flow.__anext__()
            while True:
                self._check(outgoing, request)
                response = yield outgoing
                if self._is_legacy_metadata(outgoing):
                    response = await self._legacy_metadata(outgoing, response)
                if (outgoing is request and response.status_code == 401 and not refreshed
                        and self.context.can_refresh_token()):
                    # A token the server stopped accepting before its expiry: refresh once
                    # before the SDK falls back to a full login (which needs a person).
                    refreshed = True
                    refresh = await self._refresh_token()
                    self._check(refresh, request)
                    if await self._handle_refresh_response((yield refresh)):
                        self._add_auth_header(request)
                        response = yield request
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        except OAuthFlowError as exc:
            if "does not match" in str(exc) or "issuer mismatch" in str(exc):
                raise OAuthRefused(f"MCP server {self.name!r}: refusing its OAuth metadata: "
                                   f"{exc}") from None
            raise
        finally:
            await flow.aclose()


    def _is_legacy_metadata(self, outgoing: Any) -> bool:
        """The 2025-03-26 discovery request: no protected-resource metadata, so the
        authorization server metadata is asked of the MCP server's own origin."""
        if (outgoing.method != "GET" or self.context.protected_resource_metadata is not None
                or self.context.auth_server_url is not None):
            return False
        parts = urlsplit(self.context.server_url)
        return str(outgoing.url) == (f"{parts.scheme}://{parts.netloc}"
                                     "/.well-known/oauth-authorization-server")

    async def _legacy_metadata(self, outgoing: Any, response: Any) -> Any:
        """The 2025-03-26 metadata of an authorization server embedded in the MCP server,
        whose issuer names a path of that origin (``https://host/oauth``): RFC 8414's exact
        match, which the SDK applies, refuses it. nyz accepts it only when the issuer has the
        MCP server's own origin (scheme, host, port): the metadata came from that origin, so
        it says nothing that origin could not say anyway. Any other issuer is left to the
        SDK's check, which refuses it. Returns the response the SDK is to see."""
        if response.status_code != 200:
            return response
        from mcp.client.auth.utils import issuers_match
        from mcp.shared.auth import OAuthMetadata
        from pydantic import ValidationError

        try:
            meta = OAuthMetadata.model_validate_json(await response.aread())
        except ValidationError:
            return response
        origin = urlsplit(str(outgoing.url))
        if (issuers_match(str(meta.issuer), f"{origin.scheme}://{origin.netloc}")
                or _origin_of(str(meta.issuer)) != _origin_of(str(outgoing.url))):
            return response  # the SDK's own case, or refused by the SDK's check
        self.context.oauth_metadata = meta
        # found: the SDK moves on as if its single legacy URL served nothing, keeping this
        return type(response)(404, request=outgoing)

    def _check(self, outgoing: Any, request: Any) -> None:
        if outgoing is request:
            return
        if self.context.redirect_handler is None and self._is_registration(outgoing):
            if (self.context.protected_resource_metadata is None
                    and self.context.oauth_metadata is None):
                # a 401 from a server that offers no OAuth: a login would not help
                raise NotOAuth(f"MCP server {self.name!r} answered 401 and publishes no OAuth "
                               f"metadata: check its url and [mcp.servers.{self.name}] headers")
            raise NeedsLogin(login_line(self.name))  # no client registered for nothing
        if not safe_url(str(outgoing.url)):
            raise OAuthRefused(
                f"MCP server {self.name!r}: refusing its OAuth metadata: it points to "
                f"{outgoing.url.scheme}://{outgoing.url.host} (only HTTPS or loopback)")


    def _is_registration(self, outgoing: Any) -> bool:
        meta = self.context.oauth_metadata
        endpoint = str(meta.registration_endpoint) if meta and meta.registration_endpoint else None
        url = str(outgoing.url)
        return outgoing.method == "POST" and (url == endpoint or (
            endpoint is None and urlsplit(url).path == "/register"))


def provider_for(name: str, url: str, *, env: Mapping[str, str] | None = None,
                 redirect_uri: str = "http://127.0.0.1/callback", redirect_handler: Any = None,
                 callback_handler: Any = None, on_secret: Any = None,
                 client_metadata_url: str | None = None,
                 client_id: str | None = None,
                 client_secret: str | None = None) -> NyzOAuthProvider:
    """The auth for server ``name`` at ``url``; without handlers it only uses stored tokens."""
    storage = McpTokenStorage(name, url, env, on_secret=on_secret)
    if client_secret and on_secret is not None:
        on_secret(f"mcp.servers.{name}.client_secret_env", client_secret)
    metadata = OAuthClientMetadata(
        client_name="nyz", redirect_uris=[redirect_uri],
        grant_types=["authorization_code", "refresh_token"], response_types=["code"],
        token_endpoint_auth_method="none",
    )

    async def checked_redirect(auth_url: str) -> None:
        if not safe_url(auth_url):
            raise OAuthRefused(f"MCP server {name!r}: refusing its authorization URL "
                               f"{urlsplit(auth_url).scheme}://{urlsplit(auth_url).hostname} "
                               "(only HTTPS or loopback)")
        await redirect_handler(auth_url)

    return NyzOAuthProvider(
        name, storage, client_id, client_secret, server_url=url, client_metadata=metadata,
        redirect_handler=checked_redirect if redirect_handler is not None else None,
        callback_handler=callback_handler, client_metadata_url=client_metadata_url,
    )


def expired_for(storage: McpTokenStorage) -> bool:
    expires_at = storage.expires_at()
    return expires_at is not None and time.time() >= expires_at
