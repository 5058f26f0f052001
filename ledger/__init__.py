"""Everything computed from history for people and contracts: SLA, reports, bundles, export."""
