"""What the measured failure rate means for a job (docs/repairs.md states the model).

Model: every node fails independently, as a Poisson process at the fleet's measured rate
``lam`` per node-hour (exponential times between failures), and any failure of any node
interrupts the job. A job of ``N`` nodes then fails at ``N lam`` per hour:
- P(no interruption in H hours) = exp(-N lam H);
- expected time to the first interruption = MTBF_job = 1 / (N lam);
- Young/Daly's first-order checkpoint interval tau = sqrt(2 C MTBF_job) for a
  checkpoint that takes C hours;
- work lost per failure: on average half an interval since the last checkpoint, plus
  the restart time R, on every GPU of the job: N G (tau / 2 + R) GPU-hours.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class JobForecast:
    """The forecast for one job shape."""

    nodes: int
    hours: float
    gpus_per_node: int
    checkpoint_cost_h: float
    restart_h: float
    rate_per_node_hour: float
    p_no_interruption: float
    mtbf_job_h: float | None  # None: no failure observed, the model has no rate
    checkpoint_interval_h: float | None
    gpu_hours_lost_per_failure: float | None


def forecast(
    rate_per_node_hour: float,
    nodes: int,
    hours: float,
    *,
    gpus_per_node: int = 8,
    checkpoint_cost_h: float = 0.1,
    restart_h: float = 0.0,
) -> JobForecast:
    """The job forecast under the independent exponential model."""
    if nodes < 1 or hours <= 0 or rate_per_node_hour < 0 or checkpoint_cost_h < 0:
        raise ValueError("nodes >= 1, hours > 0, rate and checkpoint cost >= 0")
    job_rate = nodes * rate_per_node_hour
    p_ok = math.exp(-job_rate * hours)
    if job_rate == 0:
        return JobForecast(
            nodes, hours, gpus_per_node, checkpoint_cost_h, restart_h, 0.0, p_ok, None, None, None
        )
    mtbf = 1 / job_rate
    tau = math.sqrt(2 * checkpoint_cost_h * mtbf)
    lost = nodes * gpus_per_node * (tau / 2 + restart_h)
    return JobForecast(
        nodes,
        hours,
        gpus_per_node,
        checkpoint_cost_h,
        restart_h,
        rate_per_node_hour,
        p_ok,
        mtbf,
        tau,
        lost,
    )
