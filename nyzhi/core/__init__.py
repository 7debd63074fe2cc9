"""nyzhi.core."""
