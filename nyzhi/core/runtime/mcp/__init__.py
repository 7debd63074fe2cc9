"""MCP client pool: one supervised connection per server, shared by every agent.

Importing this package does not import the ``mcp`` SDK (0.6–1.2 s); only connecting does.
See ``pool.py`` for the pool and ``actor.py`` for the supervision tree under ``/mcp``.
"""

from nyzhi.core.runtime.mcp.login import login_command as login_command
from nyzhi.core.runtime.mcp.login import logout as logout
from nyzhi.core.runtime.mcp.pool import McpPool as McpPool
from nyzhi.core.runtime.mcp.pool import McpPrompt as McpPrompt
from nyzhi.core.runtime.mcp.pool import McpResource as McpResource
from nyzhi.core.runtime.mcp.pool import McpUnavailable as McpUnavailable
from nyzhi.core.runtime.mcp.pool import ServerStatus as ServerStatus
from nyzhi.core.runtime.mcp.pool import tool_name as tool_name
