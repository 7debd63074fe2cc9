"""``nyz acp``: nyz as an Agent Client Protocol agent, for editors (Zed, JetBrains, Neovim, Emacs).

A front end above ``core`` like the console: JSON-RPC 2.0 over stdio (``nyzhi.jsonrpc``), the
protocol's messages as attrs records through the one converter (``schema``), runtime events as
``session/update`` through the one event dispatch (``updates``), one runtime per session
(``session``) and the methods that open and drive them (``agent``); bash in the client's
terminals, still sandboxed (``terminal``). Documented in docs/editors.md.
"""
