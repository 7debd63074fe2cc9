"""nyzhi.tools."""
