"""Per-packet costs of asyncssh that the controller pays and never uses, made free.

Read against asyncssh 2.24.1 (``packet.py``, ``logging.py``, ``connection.py``);
pyproject pins ``asyncssh<3``. At 1,000 nodes the controller receives ~2,000 packets a
second, and for every one of them asyncssh

* formats a packet dump line (packet name, a pluralised byte count, a note) in
  ``SSHPacketLogger._log_packet`` *before* ``SSHLogger.packet`` looks at the debug
  level, which is 1 unless someone asks for 3 (``asyncssh.set_debug_level``);
* cancels the connection's keepalive timer and schedules a new one
  (``SSHConnection._reset_keepalive_timer``, called per read): a ``TimerHandle`` per
  read, the cancelled ones left in the loop's heap until it compacts them;
* asks ``inspect.isawaitable`` whether the packet handler's result (``True`` for
  every data packet) is awaitable: ~0.5 µs, most of it the ``Awaitable`` ABC check.

:func:`install` replaces those methods on asyncssh's classes, once per process:

* the sent/received packet loggers return at once unless the debug level is 3, so
  packet dumps appear exactly when they did;
* ``asyncssh.connection`` sees an ``inspect`` whose ``isawaitable`` answers
  ``True``, ``False`` and ``None`` at once and asks the real one about anything else;
* the keepalive timer is lazy: a read only notes its time; when the timer fires
  early relative to the last read it re-arms for the remainder, otherwise asyncssh's
  own callback runs (count an unanswered keepalive, send the next or close). A link
  silent for ``keepalive_interval * (keepalive_count_max + 1)`` is still closed and an
  answering peer keeps it open, as before.

:func:`check_asyncssh` names every attribute this relies on; a test calls it, so an
asyncssh upgrade that moves them fails there rather than silently costing again (the
monitor itself then logs a warning and runs on asyncssh as shipped).
"""

from __future__ import annotations

import inspect
import logging
import types
from collections.abc import Callable
from typing import Any

import asyncssh.connection
from asyncssh.connection import SSHConnection
from asyncssh.logging import SSHLogger
from asyncssh.packet import SSHPacketLogger

log = logging.getLogger(__name__)

ASYNCSSH_READ_AT = "2.24.1"
"""The asyncssh version whose internals this module was written against."""

_PACKET_DUMP_LEVEL = 3  # asyncssh's SSHLogger.packet logs only at this debug level
_HEARD = "_gpufleet_heard_at"  # loop time of the connection's last read

_CLASS_ATTRIBUTES: dict[type, tuple[str, ...]] = {
    SSHLogger: ("_debug_level", "packet", "set_debug_level"),
    SSHPacketLogger: ("_log_packet", "log_sent_packet", "log_received_packet"),
    SSHConnection: (
        "_reset_keepalive_timer",
        "_set_keepalive_timer",
        "_cancel_keepalive_timer",
        "_keepalive_timer_callback",
        "_recv_data",
        "set_keepalive",
    ),
}
CONNECTION_ATTRIBUTES = (
    "_loop",
    "_auth_complete",
    "_keepalive_timer",
    "_keepalive_interval",
    "_keepalive_count",
    "_keepalive_count_max",
)
"""Instance attributes of an asyncssh connection the lazy keepalive reads."""

_originals: dict[tuple[type, str], Callable[..., Any]] = {}


def _isawaitable(value: object, _real: Callable[[object], bool] = inspect.isawaitable) -> bool:
    # A packet handler returns True (or None) unless it returns a coroutine.
    return value is not True and value is not None and value is not False and _real(value)


# The inspect module as asyncssh.connection sees it once installed: the same names,
# with isawaitable answering the common results before the ABC check.
_INSPECT = types.SimpleNamespace(**{**vars(inspect), "isawaitable": _isawaitable})


def check_asyncssh() -> None:
    """Fail loudly when asyncssh no longer has what :func:`install` replaces or reads.

    Raises:
        RuntimeError: an attribute is missing (asyncssh changed; re-read it).
    """
    missing = [
        f"{cls.__name__}.{name}"
        for cls, names in _CLASS_ATTRIBUTES.items()
        for name in names
        if not hasattr(cls, name)
    ]
    if getattr(asyncssh.connection, "inspect", None) not in (inspect, _INSPECT):
        missing.append("asyncssh.connection.inspect")
    if missing:
        raise RuntimeError(
            f"asyncssh changed since {ASYNCSSH_READ_AT}: {', '.join(missing)} missing; "
            "re-read collectors/ssh/asyncssh_costs.py against it"
        )


def installed() -> bool:
    """Whether :func:`install` is in effect."""
    return bool(_originals)


def install() -> None:
    """Replace the packet loggers and the keepalive re-arm on asyncssh's classes (once)."""
    if _originals:
        return
    try:
        check_asyncssh()
    except RuntimeError as exc:
        # asyncssh as shipped still works, only dearer: a user's upgrade must not stop
        # the monitor. tests/ssh/test_asyncssh_costs.py fails on it instead.
        log.warning("%s; its per-packet costs stay", exc)
        return
    replacements: dict[tuple[type, str], Callable[..., Any]] = {
        (SSHPacketLogger, "log_sent_packet"): _log_sent_packet,
        (SSHPacketLogger, "log_received_packet"): _log_received_packet,
        (SSHConnection, "_reset_keepalive_timer"): _note_read,
        (SSHConnection, "_keepalive_timer_callback"): _keepalive_due,
    }
    for (cls, name), replacement in replacements.items():
        _originals[(cls, name)] = cls.__dict__[name]
        setattr(cls, name, replacement)
    asyncssh.connection.inspect = _INSPECT  # type: ignore[assignment]


def uninstall() -> None:
    """Put asyncssh's own methods back (for benchmarks measuring the difference)."""
    for (cls, name), original in _originals.items():
        setattr(cls, name, original)
    _originals.clear()
    asyncssh.connection.inspect = inspect


def _log_sent_packet(
    self: SSHPacketLogger, pkttype: int, pktid: int | None, packet: Any, note: str = ""
) -> None:
    if SSHLogger._debug_level >= _PACKET_DUMP_LEVEL:
        self._log_packet("Sent", pkttype, pktid, packet, note)


def _log_received_packet(
    self: SSHPacketLogger, pkttype: int, pktid: int | None, packet: Any, note: str = ""
) -> None:
    if SSHLogger._debug_level >= _PACKET_DUMP_LEVEL:
        self._log_packet("Received", pkttype, pktid, packet, note)


def _note_read(self: SSHConnection) -> None:
    """asyncssh's ``_reset_keepalive_timer``: keep the armed timer, note the time instead."""
    if not self._auth_complete:
        return
    interval = self._keepalive_interval
    if not interval:
        self._cancel_keepalive_timer()  # set_keepalive(0) turns keepalives off
        return
    now = self._loop.time()
    setattr(self, _HEARD, now)
    timer = self._keepalive_timer
    # A timer due later than a fresh one would be (set_keepalive shortened the
    # interval) is re-armed, as asyncssh would.
    if timer is None or timer.when() > now + interval:
        self._cancel_keepalive_timer()
        self._set_keepalive_timer()


def _keepalive_due(self: SSHConnection) -> None:
    """The keepalive timer fired: re-arm for the rest if a read came since it was armed."""
    heard = getattr(self, _HEARD, None)
    if heard is not None and self._keepalive_interval:
        remaining = heard + self._keepalive_interval - self._loop.time()
        if remaining > 0:
            self._keepalive_timer = self._loop.call_later(remaining, self._keepalive_timer_callback)
            return
    _originals[(SSHConnection, "_keepalive_timer_callback")](self)
