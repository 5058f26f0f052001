"""Kind-specific fault parameters: their defaults, and checks with clear messages.

Each checker takes the value written in the scenario and returns the normalised
value, or raises ``ValueError`` with a message the scenario loader prefixes with the
file and the fault's position.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from collectors.sim.kinds import KINDS

_DURATION = re.compile(r"^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$|^\d+(?:\.\d+)?$")
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)?")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
_RATE = re.compile(r"^\d+(?:\.\d+)? Gb/sec \(\d+X [A-Z]+\)$")
_LABEL = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
NVLINKS = 18

Check = Callable[[Any, str], Any]


def seconds_of(value: object, key: str) -> float:
    """Seconds from a number or a duration (``"90s"``, ``"5m"``, ``"2m15s"``, ``"250ms"``).

    Raises:
        ValueError: the value is not a finite, non-negative time.
    """
    if isinstance(value, bool):
        raise ValueError(f"{key} must be seconds or a duration like '90s', got {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and _DURATION.match(value.replace(" ", "")):
        parts = _PART.findall(value.replace(" ", ""))
        seconds = sum(float(number) * _UNIT_SECONDS[unit or None] for number, unit in parts)
    else:
        raise ValueError(f"{key} {value!r} is not a time; expected seconds or e.g. '90s', '5m'")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"{key} {value!r} must be a finite time >= 0")
    return seconds


def _positive_duration(value: Any, key: str) -> float:
    seconds = seconds_of(value, key)
    if seconds <= 0:
        raise ValueError(f"{key} must be longer than 0 s")
    return seconds


def _positive_number(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{key} must be a number > 0, got {value!r}")
    return float(value)


def _int_in(low: int, high: int) -> Check:
    def check(value: Any, key: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"{key} must be an integer from {low} to {high}, got {value!r}")
        return value

    return check


def _one_of(*choices: Any) -> Check:
    def check(value: Any, key: str) -> Any:
        if value not in choices or isinstance(value, bool):
            raise ValueError(f"{key} must be one of {', '.join(map(repr, choices))}, got {value!r}")
        return value

    return check


def _boolean(value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{key} must be true or false, got {value!r}")
    return value


def _fraction(value: Any, key: str) -> float:
    number = _positive_number(value, key)
    if number > 1:
        raise ValueError(f"{key} must be in (0, 1], got {value!r}")
    return number


def _slowdown(value: Any, key: str) -> float:
    number = _positive_number(value, key)
    if number < 1:
        raise ValueError(f"{key} must be >= 1 (how many times slower), got {value!r}")
    return number


def _ib_rate(value: Any, key: str) -> str:
    if not isinstance(value, str) or not _RATE.match(value):
        raise ValueError(f"{key} must read like '200 Gb/sec (2X NDR)', got {value!r}")
    return value


def _label(value: Any, key: str) -> str:
    if not isinstance(value, str) or not _LABEL.match(value):
        raise ValueError(f"{key} must be 1-64 letters, digits, '.', '_' or '-', got {value!r}")
    return value


def _kinds(value: Any, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise ValueError(f"{key} must be a non-empty list of fault kinds")
    for kind in value:
        if kind not in KINDS or kind == "recover":
            raise ValueError(f"{key} names unknown kind {kind!r}")
    return tuple(value)


# kind -> parameter -> (checker, default). A default of None means "absent unless written".
PARAMS: dict[str, dict[str, tuple[Check, Any]]] = {
    "xid79": {},
    "ecc_dbe": {
        "xid": (_one_of(48, 94, 95), 48),
        "count": (_int_in(1, 1_000_000), 1),
        "recovery_action": (_int_in(0, 7), 1),
    },
    "row_remap_pending": {"cause": (_one_of("correctable", "uncorrectable"), "correctable")},
    "row_remap_failure": {},
    "nvlink_crc_storm": {
        "link": (_int_in(0, NVLINKS - 1), 0),
        "rate": (_positive_number, 150.0),
        "replay_every": (_positive_duration, 10.0),
    },
    "nvlink_down": {"link": (_int_in(0, NVLINKS - 1), 0)},
    "thermal_slowdown": {"temp": (_int_in(40, 120), 92), "clock_factor": (_fraction, 0.5)},
    "slow_gpu": {"factor": (_slowdown, 3.0)},
    "sdc": {},
    "gpu_missing": {},
    "ib_link_down": {
        "flap": (_boolean, False),
        "down_s": (_positive_duration, 5.0),
        "up_s": (_positive_duration, 20.0),
    },
    "ib_symbol_errors": {"rate": (_positive_number, 20.0)},
    "ib_degraded_rate": {"rate": (_ib_rate, "200 Gb/sec (2X NDR)")},
    "agent_crash": {"exit_code": (_int_in(1, 255), 137)},
    "agent_hang": {},
    "node_unreachable": {},
    "recover": {"kinds": (_kinds, None), "new_uuid": (_boolean, False)},
    "memory_reserved": {"gib": (_positive_number, 5.0)},
    "power_capped": {"watts": (_int_in(100, 1000), 500)},
    "pcie_degraded": {"gen": (_int_in(1, 6), 4), "width": (_int_in(1, 16), 8)},
    "provider_check": {
        "period": (_positive_duration, 3600.0),
        "duration": (_positive_duration, 1200.0),
    },
    "reboot": {},
    "node_replaced": {},
    "slow_fabric": {"factor": (_slowdown, 4.0)},
    "fabric_hang": {},
    "job": {
        "id": (_int_in(1, 2**31 - 1), 1000),
        "user": (_label, "alice"),
        "account": (_label, "research"),
        "partition": (_label, "gpu"),
        "name": (_label, "train"),
        "idle": (_boolean, False),
    },
}


def normalize_params(kind: str, written: Mapping[str, Any]) -> dict[str, Any]:
    """Check the parameters written for ``kind`` and fill in defaults.

    Raises:
        ValueError: an unknown parameter or a bad value, named in the message.
    """
    spec = PARAMS[kind]
    for key in written:
        if key not in spec:
            expected = ", ".join(sorted(spec)) or "none"
            raise ValueError(f"unknown parameter {key!r} for kind {kind!r}; expected {expected}")
    params: dict[str, Any] = {}
    for key, (check, default) in spec.items():
        if key in written:
            params[key] = check(written[key], key)
        elif default is not None:
            params[key] = default
    return params
