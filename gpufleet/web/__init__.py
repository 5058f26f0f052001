"""`gpufleet web`: the dashboard in a browser."""
