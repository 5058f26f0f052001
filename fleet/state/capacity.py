"""How the state's preallocated row arrays (GPU slots, port slots) grow."""

from __future__ import annotations


def grown(capacity: int, needed: int) -> int:
    """The next row count of arrays that hold ``capacity`` rows and must hold ``needed``.

    A quarter more, not double: slots are taken one port (or one node's GPUs) at a time
    as sessions start, and every row of a new array is written (``np.full``), so all of
    it is resident. Doubling left a fleet of ~9,000 ports in arrays of 16,384 rows; a
    quarter keeps the unused share under a fifth, and the copies stay amortized (a row
    is copied about four times over, summed over every growth).
    """
    return max(needed, capacity + max(capacity // 4, 16))
