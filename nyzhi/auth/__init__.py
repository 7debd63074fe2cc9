"""nyzhi.auth."""
