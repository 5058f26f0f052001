"""Textual themes with gpufleet role variables."""
