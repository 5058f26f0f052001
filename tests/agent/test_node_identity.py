"""The hello's boot id and machine id: read from the node's files, bounded, never trusted."""

from __future__ import annotations

from pathlib import Path

from collectors.agent.host import MAX_ID_CHARS, node_identity, read_id
from tests.agent.conftest import run_agent


def test_the_hello_carries_this_machines_boot_id_and_machine_id(sysfs_dir: Path) -> None:
    hello = run_agent(sysfs_dir, samples=1).hello
    # The oracle: the kernel's and systemd's own files on the machine running the test.
    boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    assert hello.boot_id == boot and len(boot) == 36
    machine = Path("/etc/machine-id")
    expected = machine.read_text(encoding="ascii").strip() or None if machine.exists() else None
    assert hello.machine_id == expected


def test_ids_come_from_the_given_roots_first_line_stripped(tmp_path: Path) -> None:
    (tmp_path / "proc/sys/kernel/random").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel/random/boot_id").write_text(" 1234-abcd \nsecond line\n")
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/machine-id").write_text("0123456789abcdef0123456789abcdef\n")
    assert node_identity(str(tmp_path / "proc"), str(tmp_path / "etc")) == {
        "boot_id": "1234-abcd",
        "machine_id": "0123456789abcdef0123456789abcdef",
    }


def test_missing_empty_binary_or_oversized_files_are_bounded_or_null(tmp_path: Path) -> None:
    assert read_id(str(tmp_path / "absent")) is None
    assert read_id(str(tmp_path)) is None  # a directory is unreadable as a file
    empty, binary, huge, control = (tmp_path / n for n in ("empty", "binary", "huge", "ctl"))
    empty.write_text("\n")
    binary.write_bytes(b"\xff\xfe\x00id\n")
    huge.write_text("a" * 100_000)
    control.write_bytes(b"ab\x1b[2Jcd\n")  # a terminal escape
    assert read_id(str(empty)) is None
    assert read_id(str(binary)) is None
    assert read_id(str(huge)) == "a" * MAX_ID_CHARS
    assert read_id(str(control)) is None
