"""Terminal UI: screens and widgets rendering FleetSnapshots."""
