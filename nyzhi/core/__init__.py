"""nyzhi.core: the engine, in three tiers that import downwards only.

- shared, at this package's top: ``events`` (the one vocabulary), ``errors``, ``event_bus``
  and ``prompt_env`` (the environment a ``session_start`` event carries): every tier's;
- ``loop``: one agent's turns, tool steps, context window, compaction, state record, prompt;
- ``runtime``: the assembly of loops into a session (agents, placement, subagents, roles,
  MCP, LSP, teams, sessions, checkpoints, hooks, plugins, commands) and ``open_runtime``;
- ``protocol``: the session protocol front ends talk through (ops in, events out, status).

``tests/nyzhi/test_nyzhi_layering.py`` (``CORE_TIERS``) checks the order; the upward
imports still left are listed there (``CORE_TIER_DEBT``) and may only shrink.
"""
