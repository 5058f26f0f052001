"""Exact (Garwood) confidence limits for a Poisson count, with the standard library.

The chi-square quantiles of Garwood's interval have even degrees of freedom, where the
chi-square distribution function equals a Poisson tail:
``P(chi2(2k) <= 2 lam) = P(Poisson(lam) >= k)``. So each limit is the rate at which a
Poisson tail equals alpha/2, found by bisection to a relative 1e-12; no scipy needed.
"""

from __future__ import annotations

import math


def poisson_cdf(k: int, lam: float) -> float:
    """P(Poisson(lam) <= k), summed in log space so large ``lam`` does not underflow.

    Terms more than 40 standard deviations below the largest one summed are below
    e^-800 of it and are skipped: a fleet's month of thousands of failures stays fast.
    """
    if k < 0:
        return 0.0
    if lam <= 0:
        return 1.0
    log_lam = math.log(lam)
    first = max(0, math.floor(min(k, lam) - 40 * math.sqrt(lam) - 40))
    total = 0.0
    for i in range(first, k + 1):
        total += math.exp(-lam + i * log_lam - math.lgamma(i + 1))
    return min(total, 1.0)


def _solve(target: float, k: int, rising: bool) -> float:
    # rising: the upper tail P(X >= k) grows with lam; else the lower tail P(X <= k) falls.
    lo, hi = 0.0, max(1.0, 2.0 * k + 10.0)
    while (poisson_cdf(k, hi) > target) if not rising else (1 - poisson_cdf(k - 1, hi) < target):
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        value = 1 - poisson_cdf(k - 1, mid) if rising else poisson_cdf(k, mid)
        if (value < target) == rising:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * max(hi, 1e-300):
            break
    return (lo + hi) / 2


def garwood(count: int, confidence: float = 0.95) -> tuple[float, float]:
    """Limits (lower, upper) on the expected count behind an observed ``count``.

    lower = chi2(alpha/2; 2k)/2 (0 when k = 0), upper = chi2(1 - alpha/2; 2k + 2)/2.
    """
    if count < 0 or not 0 < confidence < 1:
        raise ValueError("count must be >= 0 and confidence in (0, 1)")
    alpha = 1 - confidence
    lower = 0.0 if count == 0 else _solve(alpha / 2, count, rising=True)
    upper = _solve(alpha / 2, count, rising=False)
    return lower, upper
