"""Repairs and reliability from the renter's side: repair records, lemons, failure rates
and a job-failure forecast, all read from the history (see docs/repairs.md)."""
