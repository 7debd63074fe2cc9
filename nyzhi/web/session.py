"""The web page's session: the live-session hub (``nyzhi.core.protocol.live``) with the page's
own words for its slash commands' host. Everything else of a served session (its event log,
replay, tree, approvals) is the hub's, shared with ``nyz attach``."""

from __future__ import annotations

from nyzhi.core.protocol.live import DEFAULT_KEEP, DEFAULT_KEEP_BYTES, LiveHost, LiveSession, Viewer


class WebHost(LiveHost):
    """A browser as the slash commands' ``CommandHost`` (see ``LiveHost``)."""

    cancel_hint = "the Cancel button or /cancel"
    keys_help = ("Enter sends; / completes commands; the tree's buttons cancel an agent.\n"
                 "Approvals: approve, always (this session), deny.")
    leave_hint = "close the page to leave; the session goes on in nyz serve"


class WebSession(LiveSession):
    host_class = WebHost


__all__ = ["DEFAULT_KEEP", "DEFAULT_KEEP_BYTES", "Viewer", "WebHost", "WebSession"]
