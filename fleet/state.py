"""Fleet state: ingests node updates, publishes FleetSnapshots."""
