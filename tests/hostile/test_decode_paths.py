"""Property: the decoder's fast path (a byte scan decides which walks run) and its full
path (every value walked, every string cleaned) give the same answer for every line."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from collectors.protocol import Message, ProtocolError, decode_line, decode_line_checked
from tests.hostile.test_property import json_values, lines

# Integers on both sides of every 64-bit edge, with and without a minus, as text.
boundary_ints = st.sampled_from(
    [2**63 - 1, 2**63, 2**64 - 1, 2**64, 10**19, 10**19 - 1, -(2**63), -(2**63) - 1, -(10**19)]
) | st.integers(min_value=-(2**66), max_value=2**66)
hostile_text = st.sampled_from(["\x1b[2J", "\u202e", "\x7f", "é", "\\", "\n", "plain"]) | st.text(
    max_size=8
)


def _answer(decode: object, line: bytes | str) -> Message | str:
    assert callable(decode)
    try:
        message: Message = decode(line)
    except ProtocolError as exc:
        return f"ProtocolError: {exc}"
    return message


def _sample(row: list[object], hw: dict[str, object], name: object) -> bytes:
    line = {"type": "sample", "v": 1, "t": 1.5, "seq": 3, "gpus": [row], "hw": [hw]}
    line["errs"] = {"0": {"util": name}}
    return json.dumps(line).encode()


samples = st.builds(
    _sample,
    st.lists(boundary_ints | json_values, max_size=6),
    st.dictionaries(hostile_text, boundary_ints, max_size=3),
    hostile_text | json_values,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(line=lines() | samples)
@example(line=b'{"v":1,"type":"sample","t":1,"seq":0,"gpus":[[-9223372036854775808]]}')
@example(line=b'{"v":1,"type":"sample","t":1,"seq":0,"gpus":[[-9223372036854775809]]}')
@example(line=b'{"v":1,"type":"sample","t":1,"seq":0,"gpus":[[18446744073709551616]]}')
@example(line=b'{"v":1,"type":"bye","t":1,"reason":"a\\u001b[2Jb\x7f\xc3\xa9"}')
@example(line=b'{"v":1,"type":"bye","t":1,"reason":"12345678901234567890"}')
@example(line=b'{"v":1,"type":"bye","t":1,"reason":"a\x7fb"}')  # a raw DEL alone
def test_fast_and_full_decode_agree(line: bytes) -> None:
    assert _answer(decode_line, line) == _answer(decode_line_checked, line)


@pytest.mark.parametrize(
    "line",
    [
        b'{"v":1,"type":"bye","t":1,"reason":"\\u001b]52;c;aGk=\\u0007"}',
        b'{"v":1,"type":"event","t":1,"kind":"xid","code":18446744073709551616}',
        b'{"v":1,"type":"sample","t":1,"seq":0,"gpus":[[1,2.5,null]]}',
    ],
)
def test_a_text_line_gets_the_same_answer_as_its_bytes(line: bytes) -> None:
    assert _answer(decode_line, line.decode()) == _answer(decode_line, line)
