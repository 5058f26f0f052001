"""Jobs joined with failures, outages and idle time."""
