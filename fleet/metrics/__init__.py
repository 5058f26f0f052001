"""Prometheus exposition of the fleet: a custom collector, a fast text renderer, an endpoint.

Nothing is registered anywhere at import time (docs/metrics.md).
"""
