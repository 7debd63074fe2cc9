"""The agent loop: one agent's turns, the tier of core that knows nothing of the runtime.

An agent actor (``agent``) runs turns (``turn``); each model step's tool calls go through the
gated tool step (``tool_step``) onto the executor (``tool_executor``, ``background``); the
context window, compaction and the state record keep a long conversation inside the model's
window; ``prompt`` builds the system prompt. Modules here import only each other and the
modules shared at ``nyzhi.core`` (events, errors, the event bus): the runtime above assembles
them, and ``tests/nyzhi/test_nyzhi_layering.py`` holds the tiers to that order.
"""
