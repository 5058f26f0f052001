"""The repairs ledger: how fast the provider repairs, lemons, failure rates."""
