"""What an agent knows beyond the code in front of it: memory, skills, custom commands, plans.

Each module here reads and writes plain files (markdown a person can edit) and depends only on
``nyzhi.config``: the tools (``nyzhi.tools.builtin.knowledge``), the runtime
(``nyzhi.core.runtime.session_knowledge``) and the command line all use the same functions.

- ``memory``: the user's ``MEMORY.md`` and each project's memory directory (an index plus topic
  files) under the user's data directory, never in the repository;
- ``recall``: an SQLite FTS5 index over those memory files that finds the facts relevant to a
  user message;
- ``skills``: ``.nyzhi/skills/NAME/SKILL.md`` and ``.claude/skills/NAME/SKILL.md``;
- ``commands``: custom slash commands from ``.nyzhi/commands``, ``.claude/commands`` and
  ``[[agent.commands]]``;
- ``plans``: where plans and notepads live in the workspace, and the plan-mode texts.
"""
