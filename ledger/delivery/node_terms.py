"""The contract's terms for each node and network port, judged per recorded minute.

``gpu_count`` (fewer GPUs reported than ``gpus_per_node``: each takes its GPU-hours),
``driver`` (the node's NVIDIA driver outside ``driver_min``..``driver_max``: every GPU
of the node), ``network_ports`` (fewer IB/RoCE/EFA ports ACTIVE than
``network_ports``) and ``network_rate`` (an ACTIVE port slower than
``network_rate_gbps``). A port carries ``gpus_per_node / network_ports`` of the node's
GPUs (one GPU a port on a rail-optimised node), or the node's GPUs shared among the
ports it reported where the contract does not count them.
"""

from __future__ import annotations

import re

import polars as pl

from fleet.settings.contract_section import ContractSection
from ledger.delivery.breach import Breach, breach

NETWORK_KINDS = ("ib", "roce", "efa")  # the contract's network ports; Ethernet NICs are not
_VERSION = re.compile(r"^\d{1,9}(\.\d{1,9}){0,7}$")  # bounded: agents are not trusted


def _node_minutes(frame: pl.DataFrame) -> pl.DataFrame:
    """One row per reported node-minute: GPUs reported, the driver and ports ACTIVE."""
    return frame.group_by("node", "t").agg(
        gpus=pl.col("gpu").n_unique(),
        driver=pl.col("driver").drop_nulls().first(),
        ports_active=pl.col("ports_active").drop_nulls().first(),
    )


def version(text: str) -> tuple[int, ...] | None:
    """``570.124.06`` as (570, 124, 6); None for text that is no driver version."""
    return tuple(int(p) for p in text.split(".")) if _VERSION.match(text) else None


def driver_allowed(text: str, contract: ContractSection) -> bool | None:
    """Whether the driver ``text`` lies in the contract's range, versions compared part by
    part as the acceptance campaign's inventory compares them (``570.124.06`` is newer
    than ``570``, older than ``570.999``); None when ``text`` is no version."""
    found = version(text)
    if found is None:
        return None
    low = None if contract.driver_min is None else version(contract.driver_min)
    high = None if contract.driver_max is None else version(contract.driver_max)
    return not ((low is not None and found < low) or (high is not None and found > high))


def _range_text(contract: ContractSection) -> str:
    return f"{contract.driver_min or '*'}..{contract.driver_max or '*'}"


def node_breaches(
    frame: pl.DataFrame, ports: pl.DataFrame, contract: ContractSection
) -> list[Breach]:
    """Each node and port term's broken minutes: ``frame`` as the GPU terms get it,
    ``ports`` the ``port_minutes`` rows with ``t`` in ms."""
    nodes = _node_minutes(frame)
    per_node = contract.gpus_per_node
    count = nodes.with_columns(m=pl.col("gpus").cast(pl.Float64)).filter(pl.col("m") < per_node)
    out = [breach("gpu_count", float(per_node), count, per_node - pl.col("gpus"))]
    if contract.driver_min is not None or contract.driver_max is not None:
        drivers = nodes["driver"].drop_nulls().unique().to_list()
        bad = [d for d in drivers if driver_allowed(d, contract) is False]
        rows = nodes.with_columns(m=pl.col("driver")).filter(pl.col("m").is_in(bad))
        out.append(breach("driver", _range_text(contract), rows, per_node))
    wanted = contract.network_ports
    if wanted:
        rows = nodes.with_columns(m=pl.col("ports_active").cast(pl.Float64)).filter(
            pl.col("m") < wanted
        )
        missing = (wanted - pl.col("ports_active")) * per_node
        out.append(breach("network_ports", float(wanted), rows, missing, wanted))
    if contract.network_rate_gbps is not None:
        out.append(_slow_ports(ports, contract, contract.network_rate_gbps))
    return out


def _slow_ports(ports: pl.DataFrame, contract: ContractSection, rate: float) -> Breach:
    seen = pl.len().over("node", "t")
    per = contract.network_ports or seen
    rows = ports.with_columns(m=pl.col("rate_gbps").cast(pl.Float64), per=per).filter(
        (pl.col("state").str.to_uppercase() == "ACTIVE")
        & pl.col("m").is_not_null()
        & (pl.col("m") < rate)
    )
    return breach("network_rate", rate, rows, contract.gpus_per_node, pl.col("per"))
