"""Health rules: GPU, port and node verdicts (docs/health.md)."""
