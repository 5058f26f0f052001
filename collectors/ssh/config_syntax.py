"""The lexical rules of OpenSSH's client config: words, host patterns and ``%`` tokens.

Each rule follows OpenSSH 9.2 (``misc.c`` ``argv_split``, ``percent_expand``,
``tilde_expand_filename``; ``match.c`` ``match_pattern``, ``match_pattern_list``) as
described by ssh_config(5); the oracle tests hold them against ``ssh -G``.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping


class SshConfigError(ValueError):
    """An ssh config line OpenSSH would refuse; the message names file, line and keyword."""


_SPACE = " \t"


def split_keyword(line: str) -> tuple[str, str]:
    """``(keyword in lower case, the rest)``: ``Key value``, ``Key=value`` or ``Key = value``."""
    text = line.strip(" \t\r\n\f")
    end = 0
    while end < len(text) and text[end] not in _SPACE + "=":
        end += 1
    keyword, rest = text[:end], text[end:].lstrip(_SPACE)
    if rest.startswith("="):
        rest = rest[1:].lstrip(_SPACE)
    return keyword.lower(), rest


def split_words(text: str) -> list[str]:
    """The arguments of a config line, with quotes and escapes as OpenSSH's ``argv_split``.

    Raises:
        ValueError: a quote is not closed.
    """
    words: list[str] = []
    i = 0
    while i < len(text):
        if text[i] in _SPACE:
            i += 1
            continue
        if text[i] == "#":  # a comment ends the line where a word would start
            break
        word, i = _one_word(text, i)
        words.append(word)
    return words


def _one_word(text: str, i: int) -> tuple[str, int]:
    out: list[str] = []
    quote = ""
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text) and _escapable(text[i + 1], quote):
            out.append(text[i + 1])
            i += 2
            continue
        if not quote and char in _SPACE:
            break
        if not quote and char in "\"'":
            quote = char
        elif quote and char == quote:
            quote = ""
        else:
            out.append(char)
        i += 1
    if quote:
        raise ValueError("invalid quotes")
    return "".join(out), i


def _escapable(char: str, quote: str) -> bool:
    return char in "'\"\\" or (not quote and char == " ")


@functools.lru_cache(maxsize=1024)
def _pattern_regex(pattern: str) -> re.Pattern[str]:
    # Only '*' and '?' are special in OpenSSH patterns: '[' is a literal (IPv6 hosts).
    parts = (".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile("".join(parts), re.DOTALL)


def match_pattern(value: str, pattern: str) -> bool:
    """Whether ``value`` matches one ``*``/``?`` wildcard pattern, case-sensitively."""
    return _pattern_regex(pattern).fullmatch(value) is not None


def match_pattern_list(value: str, patterns: str, *, lower: bool = False) -> bool:
    """Whether ``value`` matches a comma-separated list with ``!`` negations.

    A matching negated entry wins over any positive one, as in OpenSSH.
    """
    if lower:
        value = value.lower()
    positive = False
    for entry in patterns.split(","):
        negated = entry.startswith("!")
        pattern = entry[1:] if negated else entry
        if lower:
            pattern = pattern.lower()
        if match_pattern(value, pattern):
            if negated:
                return False
            positive = True
    return positive


_TOKEN = re.compile(r"%(.?)|\$\{([^}]*)\}")


def expand_tokens(value: str, tokens: Mapping[str, str], *, environment: bool = True) -> str:
    """``value`` with ``%x`` tokens (and ``${VAR}`` when ``environment``) replaced.

    Raises:
        ValueError: an unknown token, a trailing ``%`` or an unset variable.
    """

    def replace(match: re.Match[str]) -> str:
        token, variable = match.group(1), match.group(2)
        if variable is None:
            if token == "":
                raise ValueError("'%' at the end")
            if token not in tokens:
                raise ValueError(f"unknown token %{token}")
            return tokens[token]
        if not environment:
            return match.group(0)
        if variable not in os.environ:
            raise ValueError(f"environment variable {variable!r} is not set")
        return os.environ[variable]

    return _TOKEN.sub(replace, value)


def expand_tilde(path: str, home: str) -> str:
    """``~/x`` under ``home``, ``~user/x`` under that user's home; other paths unchanged."""
    if path == "~" or path.startswith("~/"):
        return home + path[1:]
    if path.startswith("~"):
        expanded = os.path.expanduser(path)
        if expanded == path:
            raise ValueError(f"no such user in {path!r}")
        return expanded
    return path
