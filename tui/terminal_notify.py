"""Desktop notifications through the terminal: OSC 9 and OSC 777 escape sequences.

``[alerts] notify = true`` sends both with every alert, beside the bell: OSC 9
(``ESC ] 9 ; text BEL``: iTerm2, Windows Terminal, WezTerm, ghostty) and OSC 777
(``ESC ] 777 ; notify ; title ; body BEL``: urxvt, foot, WezTerm, ghostty, VTE
terminals that carry the patch). A terminal ignores the one it does not know. Inside
tmux the sequences reach the outer terminal only with ``allow-passthrough``.

The text of an alert quotes node names and reasons. They were sanitised at the decoder,
but here a single BEL or ESC would end the sequence early and the rest would be typed
into the terminal as commands, so the payload keeps printable characters only, and the
OSC 777 title no ``;`` (its field separator). OSC 9 text that starts with a number and
``;`` is a sub-command for ConEmu and Windows Terminal (``9;4`` is a progress bar): the
text always starts with ``gpufleet:``.
"""

from __future__ import annotations

OSC = "\x1b]"
BEL = "\x07"
TITLE_CHARS = 60
BODY_CHARS = 240


def notification(title: str, body: str) -> str:
    """The OSC 9 and OSC 777 sequences that show ``title`` and ``body`` on the desktop."""
    head = printable(title, TITLE_CHARS).replace(";", ",")
    text = printable(body, BODY_CHARS)
    return f"{OSC}9;gpufleet: {head}: {text}{BEL}{OSC}777;notify;gpufleet: {head};{text}{BEL}"


def printable(text: str, limit: int) -> str:
    """``text`` with every non-printable character (controls, ESC, BEL, bidi marks, line
    breaks) replaced by a space, cut to ``limit`` characters with an ellipsis."""
    clean = "".join(c if c.isprintable() else " " for c in text)
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"
