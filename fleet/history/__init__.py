"""History: in-memory ring, minute rollups, parquet partitions (docs/history.md)."""
