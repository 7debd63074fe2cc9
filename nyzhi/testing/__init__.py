"""nyzhi.testing."""
