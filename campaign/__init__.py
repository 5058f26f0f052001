"""The acceptance campaign: inventory, health gate, node probes, fabric ladder, soak."""
