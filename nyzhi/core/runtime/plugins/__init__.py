"""Claude Code plugins and marketplaces, in Claude Code's formats (issue 52).

``manifest`` reads a marketplace (``.claude-plugin/marketplace.json``) and a plugin
(``.claude-plugin/plugin.json`` and its folders) and computes the digest of what a plugin runs;
``store`` adds marketplaces (a local directory, or a git repository cloned through
``nyzhi.tools.gitsafe``'s rules) and installs, enables, disables, approves and removes plugins;
``parts`` gives the runtime an active plugin's hooks and MCP servers (only when approved).
Where they live and which are on: ``nyzhi.config.plugins``. The docs: docs/plugins.md.
"""
