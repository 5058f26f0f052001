"""A flapping port is one event-log row (how many changes, over how long, its state now)."""

from __future__ import annotations

from fleet.event_log import LogEntry, collapse_flaps


def _port(t: float, verdict: str, node: str = "node-003", port: str = "mlx5_0") -> LogEntry:
    text = f"{port} {verdict}: link down" if verdict == "fail" else f"{port} {verdict}"
    return LogEntry(t, node, "port", text, "bad" if verdict == "fail" else "good", None, verdict)


def test_nine_changes_in_three_minutes_are_one_row() -> None:
    # Newest first, as the log is read: a change every 20 s from t=1000 to t=1160.
    flaps = [_port(1000 + 20 * i, "fail" if i % 2 == 0 else "ok") for i in range(9)][::-1]
    other = LogEntry(1090, "node-007", "gpu", "GPU 1 warn: thermal", "warn", 1, "warn")
    rows = collapse_flaps([*flaps[:4], other, *flaps[4:]])
    assert [r.text for r in rows] == [
        "mlx5_0 flapped 9\u00d7 in 3 min, now fail: link down",
        "GPU 1 warn: thermal",
    ]
    assert rows[0].t == 1160 and rows[0].verdict == "fail"


def test_changes_far_apart_and_other_ports_stay_apart() -> None:
    apart = [_port(5000, "ok"), _port(3000, "fail"), _port(1000, "ok")]
    assert collapse_flaps(apart) == apart
    two_ports = [_port(1040, "fail"), _port(1020, "fail", port="mlx5_1"), _port(1000, "ok")]
    assert collapse_flaps(two_ports) == two_ports
