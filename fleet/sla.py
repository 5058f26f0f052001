"""SLA availability and credits (docs/sla.md)."""
