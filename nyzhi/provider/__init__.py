"""nyzhi.provider."""
