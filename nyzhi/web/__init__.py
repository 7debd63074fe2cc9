"""``nyz serve``: the web console, a front end above ``core`` beside the terminal console.

One process serves the page (static files shipped in this package, no build step, no CDN)
and a WebSocket (``trio-websocket``) on loopback by default. Every viewer of a session sees
every event, in the ``stream-json`` vocabulary, and may answer its approvals and questions,
message or cancel any agent, and run slash commands from the one command table. The wire
format is in ``protocol`` and docs/web.md.
"""
