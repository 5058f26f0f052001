"""The delivery ledger: delivered against contracted, where each GPU-hour went, energy."""
