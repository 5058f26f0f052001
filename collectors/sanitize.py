"""One sanitiser for every string that came from a node.

A node is hostile until proven otherwise: a GPU name, a UUID, an event's detail or
the agent's stderr may carry terminal escape sequences (OSC 52 writes the operator's
clipboard, OSC 0 retitles the tmux pane), bidi overrides that reorder what the
operator reads, or line breaks that forge log lines and /metrics samples. The decoder
passes every node string through :func:`clean_text`, so the TUI, the logs, the
/metrics labels, the reports and file names downstream only ever see clean text.

Nothing is dropped silently: each offending character is replaced by a visible
escape (``\\x1b``, ``\\u202e``), so an operator can still see that the node sent it.
ESC becoming the four printable characters ``\\x1b`` is enough to defuse a whole
sequence: what followed it is plain text.
"""

from __future__ import annotations

import re

# C0 controls (tab and newline included: every node string is shown on one line),
# DEL and C1 controls; the Unicode format characters that reorder or hide text
# (ALM, LRM/RLM, zero-width, LRE..RLO, LRI..PDI, word joiner, BOM, annotation marks);
# line/paragraph separators; lone surrogates (which cannot be encoded again).
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069"
    "\ufeff\ufff9-\ufffb\ud800-\udfff]"
)

ELLIPSIS = "\u2026"


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean_text(text: str, limit: int | None = None) -> str:
    """``text`` with every control, escape and bidi character made visible.

    Args:
        text: a string that came from a node (or from anything a node wrote).
        limit: the most characters to keep; a longer result ends in an ellipsis.

    Returns:
        ``text`` itself when it was already clean and short enough (no copy).
    """
    if _UNSAFE.search(text) is not None:
        text = _UNSAFE.sub(_visible, text)
    if limit is not None and len(text) > limit:
        text = text[: max(0, limit - 1)] + ELLIPSIS
    return text


def is_clean(text: str) -> bool:
    """Whether ``text`` holds nothing :func:`clean_text` would change (length aside)."""
    return _UNSAFE.search(text) is None


def clean_bytes(data: bytes, limit: int | None = None) -> str:
    """Bytes a node wrote (e.g. the agent's stderr) as clean text, invalid UTF-8 replaced."""
    return clean_text(data.decode("utf-8", "replace"), limit)
