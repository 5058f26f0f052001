"""~/.ssh/config is honoured as ssh would: host, port, user, keys, jump hosts, known hosts."""

from __future__ import annotations

import getpass
from pathlib import Path

import asyncssh
import pytest

from collectors.ssh import NodeTarget, SshFleet, SshOptions
from collectors.ssh.config_syntax import SshConfigError
from collectors.ssh.connect import jump_chain
from collectors.ssh.errors import classify
from testkit.loopback import LoopbackFleet, UpdateRecorder
from testkit.loopback.harness import FAST_INTERVAL, fast_options


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


async def test_ssh_config_supplies_address_port_user_and_key(tmp_path: Path) -> None:
    async with LoopbackFleet(1, gpus=2, mode="canned") as loopback:
        node = loopback.nodes["node-001"]
        config = _write(
            tmp_path / "ssh_config",
            f"Host gpu-alias\n  HostName 127.0.0.1\n  Port {node.port}\n"
            f"  User {getpass.getuser()}\n  IdentityFile {loopback.client_key_path}\n",
        )
        # Only a name: everything else comes from the ssh config file.
        target = NodeTarget(
            name="gpu-alias",
            host="gpu-alias",
            interval=FAST_INTERVAL,
            known_hosts=loopback.known_hosts,
        )
        rec = UpdateRecorder()
        async with SshFleet([target], rec, fast_options(ssh_config=(config,))):
            await rec.wait_until(lambda: rec.samples["gpu-alias"] >= 1, 10)
        assert rec.hellos["gpu-alias"].host == "node-001"
        assert node.execs >= 1


async def test_proxy_jump_from_the_ssh_config(tmp_path: Path) -> None:
    async with LoopbackFleet(2, gpus=2, mode="canned") as loopback:
        bastion, inner = loopback.nodes["node-001"], loopback.nodes["node-002"]
        user, key = getpass.getuser(), loopback.client_key_path
        config = _write(
            tmp_path / "ssh_config",
            f"Host inner\n  HostName 127.0.0.1\n  Port {inner.port}\n"
            f"  ProxyJump 127.0.0.1:{bastion.port}\n"
            f"Host *\n  User {user}\n  IdentityFile {key}\n",
        )
        target = NodeTarget(
            name="inner", host="inner", interval=FAST_INTERVAL, known_hosts=loopback.known_hosts
        )
        rec = UpdateRecorder()
        async with SshFleet([target], rec, fast_options(ssh_config=(config,))):
            await rec.wait_until(lambda: rec.samples["inner"] >= 1, 10)
            assert len(bastion.connections) == 1 and bastion.execs == 0
        assert rec.hellos["inner"].host == "node-002"


def _copy(source: str, destination: Path) -> None:
    destination.write_text(Path(source).read_text())


def _node_block(name: str, port: int) -> str:
    return f"Host {name}\n  HostName 127.0.0.1\n  Port {port}\n  User {getpass.getuser()}\n"


async def _streams(target: NodeTarget, options: SshOptions) -> str:
    """Run ``target`` until it streams a sample or settles on a failure; its status."""
    rec = UpdateRecorder()
    async with SshFleet([target], rec, options):
        await rec.wait_until(
            lambda: (
                rec.samples[target.name] >= 1
                or rec.status(target.name) in ("unreachable", "host-key-mismatch", "auth-failed")
            ),
            10,
        )
    return "streaming" if rec.samples[target.name] else str(rec.status(target.name))


async def test_a_missing_identity_file_is_skipped_as_ssh_does(tmp_path: Path) -> None:
    async with LoopbackFleet(1, gpus=2, mode="canned") as loopback:
        node = loopback.nodes["node-001"]
        config = _write(
            tmp_path / "ssh_config",
            _node_block("gpu-alias", node.port)
            + f"  IdentityFile {tmp_path}/exists_only_on_the_laptop\n"
            + f"  IdentityFile {loopback.client_key_path}\n",
        )
        target = NodeTarget(
            name="gpu-alias", host="gpu-alias", interval=FAST_INTERVAL,
            known_hosts=loopback.known_hosts,
        )  # fmt: skip
        assert await _streams(target, fast_options(ssh_config=(config,))) == "streaming"


async def test_user_known_hosts_file_tokens_are_expanded(tmp_path: Path) -> None:
    async with LoopbackFleet(1, gpus=2, mode="canned") as loopback:
        node = loopback.nodes["node-001"]
        _copy(loopback.known_hosts, tmp_path / f"kh_127.0.0.1_{node.port}_gpu-alias")
        config = _write(
            tmp_path / "ssh_config",
            _node_block("gpu-alias", node.port)
            + f"  IdentityFile {loopback.client_key_path}\n"
            + f"  UserKnownHostsFile {tmp_path}/kh_%h_%p_%n\n",
        )
        # Host keys as ssh verifies them: from the ssh config's UserKnownHostsFile.
        target = NodeTarget(name="gpu-alias", host="gpu-alias", interval=FAST_INTERVAL)
        assert await _streams(target, fast_options(ssh_config=(config,))) == "streaming"


async def test_known_hosts2_is_read_when_no_file_is_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    async with LoopbackFleet(1, gpus=2, mode="canned") as loopback:
        node = loopback.nodes["node-001"]
        (tmp_path / ".ssh").mkdir()
        _copy(loopback.known_hosts, tmp_path / ".ssh" / "known_hosts2")
        config = _write(
            tmp_path / "ssh_config",
            _node_block("gpu-alias", node.port) + f"  IdentityFile {loopback.client_key_path}\n",
        )
        target = NodeTarget(name="gpu-alias", host="gpu-alias", interval=FAST_INTERVAL)
        assert await _streams(target, fast_options(ssh_config=(config,))) == "streaming"


async def test_accept_new_records_into_the_first_user_known_hosts_file(tmp_path: Path) -> None:
    async with LoopbackFleet(1, gpus=2, mode="canned") as loopback:
        node = loopback.nodes["node-001"]
        config = _write(
            tmp_path / "ssh_config",
            _node_block("gpu-alias", node.port)
            + f"  IdentityFile {loopback.client_key_path}\n"
            + f"  UserKnownHostsFile {tmp_path}/known/%n {tmp_path}/second\n",
        )
        target = NodeTarget(
            name="gpu-alias", host="gpu-alias", interval=FAST_INTERVAL,
            host_key_policy="accept-new",
        )  # fmt: skip
        assert await _streams(target, fast_options(ssh_config=(config,))) == "streaming"
        recorded = asyncssh.read_known_hosts(str(tmp_path / "known" / "gpu-alias"))
        keys, *_ = recorded.match("127.0.0.1", "", node.port)
        assert [key.public_data for key in keys] == [loopback.host_key.public_data]
        assert not (tmp_path / "second").exists()


async def test_proxy_jump_as_an_ssh_uri(tmp_path: Path) -> None:
    async with LoopbackFleet(2, gpus=2, mode="canned") as loopback:
        bastion, inner = loopback.nodes["node-001"], loopback.nodes["node-002"]
        user, key = getpass.getuser(), loopback.client_key_path
        config = _write(
            tmp_path / "ssh_config",
            f"Host inner\n  HostName 127.0.0.1\n  Port {inner.port}\n"
            f"  ProxyJump ssh://{user}@127.0.0.1:{bastion.port}\n"
            f"Host *\n  IdentityFile {key}\n",
        )
        target = NodeTarget(
            name="inner", host="inner", interval=FAST_INTERVAL, known_hosts=loopback.known_hosts
        )
        rec = UpdateRecorder()
        async with SshFleet([target], rec, fast_options(ssh_config=(config,))):
            await rec.wait_until(lambda: rec.samples["inner"] >= 1, 10)
            logins = [conn.get_extra_info("username") for conn in bastion.connections]
        assert logins == [user]  # not "ssh://user"


def test_a_comma_in_a_host_pattern_is_part_of_the_pattern(tmp_path: Path) -> None:
    config = _write(tmp_path / "ssh_config", "Host e-node,f-node\n  HostName 10.0.0.5\n")
    options = SshOptions(ssh_config=(config,))
    assert options.resolved("e-node").hostname == "e-node"
    # asyncssh alone would send e-node to 10.0.0.5 (it splits Host patterns on commas).
    assert options.host_options("e-node").host == "e-node"
    assert options.resolved("e-node,f-node").hostname == "10.0.0.5"


def test_include_globs_are_read_in_sorted_order(tmp_path: Path) -> None:
    (tmp_path / "conf.d").mkdir()
    for name, user in (("b.conf", "from-b"), ("a.conf", "from-a"), ("c.conf", "from-c")):
        (tmp_path / "conf.d" / name).write_text(f"User {user}\n")
    config = _write(tmp_path / "ssh_config", f"Include {tmp_path}/conf.d/*.conf\n")
    assert SshOptions(ssh_config=(config,)).resolved("any").user == "from-a"


def test_a_bad_line_names_file_line_and_key(tmp_path: Path) -> None:
    config = _write(tmp_path / "ssh_config", "Host a\n  User u\nHost b\n  Port 99999\n")
    with pytest.raises(SshConfigError, match=r"ssh_config line 4: Port: expected a number"):
        SshOptions(ssh_config=(config,)).resolved("a")


def test_ssh_config_error_marks_the_node_without_a_traceback(tmp_path: Path) -> None:
    config = _write(tmp_path / "ssh_config", "Host *\n  ProxyJump @nowhere\n")
    exc: SshConfigError | None = None
    try:
        SshOptions(ssh_config=(config,)).resolved("a")
    except SshConfigError as raised:
        exc = raised
    assert exc is not None
    status, reason, expected = classify(exc)
    assert (status, expected) == ("unreachable", True)
    assert "ssh_config line 2: ProxyJump" in reason


def test_ssh_config_keys_that_cannot_be_loaded_are_skipped(tmp_path: Path) -> None:
    good = tmp_path / "id_good"
    key = asyncssh.generate_private_key("ssh-ed25519")
    key.write_private_key(str(good))
    broken = _write(tmp_path / "id_broken", "not a key\n")
    absent = str(tmp_path / "id_absent")
    options = SshOptions(ssh_config=None)
    keys = options.client_keys((absent, broken, str(good)), config=True)
    assert [pair.public_data for pair in keys] == [key.public_data]


async def test_the_first_jump_hosts_own_proxy_jump_is_followed(tmp_path: Path) -> None:
    async with LoopbackFleet(3, gpus=2, mode="canned") as loopback:
        bastion, login, inner = (loopback.nodes[f"node-00{i}"] for i in (1, 2, 3))
        config = _write(
            tmp_path / "ssh_config",
            f"Host inner\n  HostName 127.0.0.1\n  Port {inner.port}\n  ProxyJump login\n"
            f"Host login\n  HostName 127.0.0.1\n  Port {login.port}\n  ProxyJump bastion\n"
            f"Host bastion\n  HostName 127.0.0.1\n  Port {bastion.port}\n"
            f"Host *\n  IdentityFile {loopback.client_key_path}\n",
        )
        target = NodeTarget(
            name="inner", host="inner", interval=FAST_INTERVAL, known_hosts=loopback.known_hosts
        )
        options = fast_options(ssh_config=(config,))
        assert [hop.host for hop in jump_chain(target, options)] == ["bastion", "login"]
        rec = UpdateRecorder()
        async with SshFleet([target], rec, options):
            await rec.wait_until(lambda: rec.samples["inner"] >= 1, 10)
            # As ssh: bastion, then login through it, then the node through both.
            assert (len(bastion.connections), len(login.connections)) == (1, 1)
        assert bastion.execs == login.execs == 0


def test_a_proxy_jump_loop_is_refused(tmp_path: Path) -> None:
    config = _write(tmp_path / "ssh_config", "Host *\n  ProxyJump bastion\n")
    target = NodeTarget(name="gpu-1", host="gpu-1")
    with pytest.raises(SshConfigError, match="ProxyJump loop: gpu-1 is reached through bastion"):
        jump_chain(target, SshOptions(ssh_config=(config,)))


def test_the_default_reads_the_users_ssh_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".ssh").mkdir()
    _write(tmp_path / ".ssh" / "config", "Host x\n  HostName y.example\n  Port 2222\n")
    options = SshOptions()  # what `gpufleet watch` and `serve` build
    built = options.host_options("x")
    assert (built.host, built.port) == ("y.example", 2222)
    assert options.resolved("x").user_known_hosts == (
        f"{tmp_path}/.ssh/known_hosts",
        f"{tmp_path}/.ssh/known_hosts2",
    )
