"""Whether the editor should offer to log in: no provider key is found for nyz to use.

ACP agents list ``authMethods`` at ``initialize``; nyz lists one, "nyz login", only when it
would otherwise fall back to its small offline model (no ``[provider]`` configured and no key
for any provider). Logging in is interactive (a browser or a pasted key), so it happens in a
terminal; ``authenticate`` then only checks that a key is there now.
"""

from __future__ import annotations

from pathlib import Path

from nyzhi.acp import schema as s

LOGIN_METHOD = "nyz-login"
LOGIN = s.AuthMethod(
    LOGIN_METHOD, "nyz login",
    "No model provider key was found. Run `nyz login` in a terminal (until then nyz uses its "
    "small offline model).")


def login_needed(cwd: Path, provider: str | None) -> bool:
    """No provider would be chosen for a session in ``cwd``. Blocking (reads config). A
    config that cannot be read is not a login question: ``session/new`` says what is wrong."""
    from nyzhi.core.protocol.start import provider_missing

    return provider_missing(cwd, provider)
