"""nyzhi.config."""
