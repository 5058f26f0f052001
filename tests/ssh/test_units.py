"""Pure pieces of the transport: command quoting, paths, backoff, error words."""

from __future__ import annotations

import gc
import shlex

import asyncssh
import pytest

from collectors.protocol import ProtocolError, decode_line
from collectors.ssh import NodeTarget, SshOptions, agent_command
from collectors.ssh.connect import HostKeyMismatchError, jump_hops
from collectors.ssh.errors import AgentExited, classify
from collectors.ssh.target import JumpHop, parse_jump_chain, sftp_dir
from collectors.ssh.upload import agent_missing, remote_file
from collectors.updates import NodeMessage


def test_agent_command_quotes_every_piece() -> None:
    target = NodeTarget(
        name="n",
        host="n",
        python="/opt/my python/bin/python3",
        interval=0.5,
        agent_args=("--host", "x; rm -rf ~", "$(id)"),
    )
    digest = "ab" * 32
    command = agent_command(target, "dir with space/agent-abc.pyz", digest)
    python, flag, _bootstrap, *rest = shlex.split(command)
    assert (python, flag) == ("/opt/my python/bin/python3", "-c")
    assert rest == [
        "dir with space/agent-abc.pyz", digest,
        "--interval", "0.5", "--slow-interval", "10.0", "--host", "x; rm -rf ~", "$(id)",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("remote_dir", "expected"),
    [
        ("~/.cache/gpufleet", ".cache/gpufleet/agent-1.pyz"),
        ("~", "./agent-1.pyz"),
        ("/var/tmp/gf/", "/var/tmp/gf/agent-1.pyz"),
        ("cache", "cache/agent-1.pyz"),
    ],
)
def test_remote_file_is_home_relative_without_tilde(remote_dir: str, expected: str) -> None:
    assert remote_file(remote_dir, "agent-1.pyz") == expected


def test_remote_paths_refuse_other_users_homes_and_subdirs() -> None:
    with pytest.raises(ValueError, match="only '~/'"):
        sftp_dir("~root/x")
    with pytest.raises(ValueError, match="plain file name"):
        remote_file("~/x", "../agent.pyz")


def test_backoff_doubles_to_the_cap_with_equal_jitter() -> None:
    options = SshOptions(backoff_base=1.0, backoff_cap=8.0)
    assert [options.backoff(n, 0.999999) for n in (1, 2, 3, 4, 5)] == pytest.approx(
        [1, 2, 4, 8, 8], rel=1e-5
    )
    assert options.backoff(3, 0.0) == 2.0  # never below half the delay


def test_missing_agent_is_recognised_from_pythons_words() -> None:
    missing = AgentExited(
        "agent exited with status 2: python3: can't open file '/x/agent-1.pyz': "
        "[Errno 2] No such file or directory"
    )
    assert agent_missing(missing)
    assert not agent_missing(AgentExited("agent exited with status 2: usage: bad flag"))
    assert not agent_missing(ProtocolError("can't open file"))


@pytest.mark.parametrize(
    ("exc", "status", "words"),
    [
        (TimeoutError(), "unreachable", "timed out connecting"),
        (ConnectionRefusedError(111, "Connect call failed"), "unreachable", "connection refused"),
        (
            asyncssh.ConnectionLost("Connection lost"),
            "unreachable",
            "disconnected: Connection lost",
        ),
        (asyncssh.PermissionDenied("no"), "auth-failed", "authentication failed: no"),
        (HostKeyMismatchError("host key of n ..."), "host-key-mismatch", "host key of n"),
        (ProtocolError("bad"), "protocol-error", "not protocol v1: bad"),
        (AgentExited("agent exited with status 1"), "agent-error", "status 1"),
    ],
)
def test_errors_map_to_status_words(exc: BaseException, status: str, words: str) -> None:
    got_status, reason, expected = classify(exc)
    assert (got_status, expected) == (status, True)
    assert words in reason


def test_a_bug_is_not_expected() -> None:
    status, reason, expected = classify(KeyError("oops"))
    assert (status, expected) == ("agent-error", False)
    assert reason.startswith("internal error: KeyError")


@pytest.mark.parametrize(
    ("spec", "hops"),
    [
        ("ssh://ops@jump3:2203", [JumpHop("jump3", "ops", 2203)]),
        ("root@[2001:db8::7]:2204", [JumpHop("2001:db8::7", "root", 2204)]),
        ("[2001:db8::8]", [JumpHop("2001:db8::8")]),
        ("a@b@c:5", [JumpHop("c", "a@b", 5)]),
        ("ssh://u%40x;fp=1@h/", [JumpHop("h", "u@x")]),
        ("b1,ops@b2:2222", [JumpHop("b1"), JumpHop("b2", "ops", 2222)]),
        ("none", []),
    ],
)
def test_jump_chains_parse_as_openssh_parses_them(spec: str, hops: list[JumpHop]) -> None:
    assert list(parse_jump_chain(spec)) == hops
    assert ",".join(str(hop) for hop in hops) == ",".join(
        str(hop) for hop in parse_jump_chain(",".join(str(hop) for hop in hops) or "none")
    )


@pytest.mark.parametrize(
    "spec", ["2001:db8::7", "h:0", "h:abc", "u@", "@h", "ssh://[2001:db8::9]:22", "ssh://h:2/p"]
)
def test_jump_hosts_ssh_refuses_are_refused(spec: str) -> None:
    with pytest.raises(ValueError, match="invalid jump host"):
        parse_jump_chain(spec)


def test_jump_hops_keep_the_target_settings_per_hop() -> None:
    target = NodeTarget(name="n", host="n", jump_host="ssh://ops@j1:2203,[fd00::1]:22")
    hops = jump_hops(target)
    assert [(h.host, h.user, h.port) for h in hops] == [("j1", "ops", 2203), ("fd00::1", None, 22)]
    assert hops[1].name == "n (jump host fd00::1)"


def test_a_node_message_is_not_tracked_by_the_garbage_collector() -> None:
    # ~1,000 are built a second; tracked, each would count towards the next collection.
    message = decode_line(b'{"v":1,"type":"bye","t":1.0}')
    update = NodeMessage("node-001", message, 2.0)
    assert not gc.is_tracked(update)
    assert update == NodeMessage("node-001", message, 2.0)
    assert (update.node, update.message, update.received) == ("node-001", message, 2.0)
