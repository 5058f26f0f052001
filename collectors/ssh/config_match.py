"""Which ``Host`` and ``Match`` blocks of an ssh config apply to a host (OpenSSH 9.2 rules)."""

from __future__ import annotations

from collections.abc import Sequence

from collectors.ssh.config_syntax import SshConfigError, match_pattern, match_pattern_list
from collectors.ssh.config_tokens import hostname_template

# Criteria evaluated as not matching: ``exec`` would run a shell command from the config
# file and ``localnetwork`` needs the interface table; ``canonical`` and ``final`` hold
# only in the second pass OpenSSH makes after canonicalisation, which is not made here.
_NEVER_TRUE = frozenset({"exec", "localnetwork", "canonical", "final"})
_WITHOUT_ARGUMENT = frozenset({"all", "canonical", "final"})


def match_host_line(host: str, patterns: Sequence[str], where: str) -> bool:
    """Whether a ``Host`` line applies: words split on whitespace only, ``!`` vetoes.

    A comma is part of a pattern (``Host a,b`` matches the name ``a,b`` only).
    """
    matched = False
    for word in patterns:
        if not word:
            raise SshConfigError(f"{where}: Host: empty pattern")
        negated = word.startswith("!")
        if match_pattern(host, word[1:] if negated else word):
            if negated:
                return False
            matched = True
    return matched


def match_line(words: Sequence[str], subjects: dict[str, str], where: str) -> bool:
    """Whether a ``Match`` line applies, given what each criterion tests.

    ``subjects`` maps ``host`` (the HostName set so far with ``%h`` expanded, else
    the name asked for), ``originalhost``, ``user`` (the User set so far, else the
    local user) and ``localuser`` to their values.
    """
    criteria = [part for word in words for part in word.split("=") if part]
    result = True
    i = 0
    while i < len(criteria):
        attribute = criteria[i].lower()
        negated = attribute.startswith("!")
        attribute = attribute.lstrip("!")
        i += 1
        if attribute == "all" and not _alone(criteria, i):
            raise SshConfigError(f"{where}: Match: 'all' cannot be combined with other criteria")
        if attribute in _WITHOUT_ARGUMENT:
            matched = attribute == "all"
        else:
            if i >= len(criteria):
                raise SshConfigError(f"{where}: Match: missing pattern for {attribute!r}")
            matched = _criterion(attribute, criteria[i], subjects, where)
            i += 1
        if matched == negated:
            result = False
    return result


def match_subjects(
    original_host: str, hostname: str | None, remote_user: str, local_user: str
) -> dict[str, str]:
    """What ``Match host``, ``originalhost``, ``user`` and ``localuser`` test."""
    host = hostname_template(hostname, original_host) if hostname else original_host
    return {
        "host": host,
        "originalhost": original_host,
        "user": remote_user,
        "localuser": local_user,
    }


def _alone(criteria: list[str], after_all: int) -> bool:
    """``all`` is the last word, after nothing but ``canonical`` or ``final``."""
    before = (word.lower().lstrip("!") for word in criteria[: after_all - 1])
    return after_all == len(criteria) and all(word in ("canonical", "final") for word in before)


def _criterion(attribute: str, pattern: str, subjects: dict[str, str], where: str) -> bool:
    if attribute in subjects:
        # Host names compare in lower case (match_hostname), user names as written.
        lower = attribute in ("host", "originalhost")
        return match_pattern_list(subjects[attribute], pattern, lower=lower)
    if attribute in _NEVER_TRUE:
        return False
    raise SshConfigError(f"{where}: Match: unsupported criterion {attribute!r}")
