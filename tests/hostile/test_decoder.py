"""The decoder is the one gate: every node value is checked and cleaned there."""

from __future__ import annotations

import json

import pytest

from collectors.protocol import Event, Hello, ProtocolError, Sample, decode_line
from collectors.sanitize import clean_bytes, clean_text

# A fixed, recent time: parametrised ids must be the same in every pytest-xdist worker.
NOW = 1_795_386_600


@pytest.mark.parametrize(
    ("line", "where"),
    [
        # The minimal line: a GPU index outside 0..65535.
        (b'{"v":1,"type":"event","t":%d,"kind":"xid","gpu":-1,"code":79}' % NOW, "$.gpu"),
        (b'{"v":1,"type":"event","t":1,"kind":"xid","gpu":65536}', "$.gpu"),
        (b'{"v":1,"type":"event","t":1,"kind":"xid","code":9223372036854775808}', "$.code"),
        (b'{"v":1,"type":"event","t":1e300,"kind":"xid"}', "$.t"),
        (b'{"v":1,"type":"event","t":-5,"kind":"xid"}', "$.t"),
        (b'{"v":1,"type":"event","t":1,"kind":"xid","detail":"%s"}' % (b"d" * 5000), "$.detail"),
        (b'{"v":1,"type":"sample","t":1,"seq":0,"gpus":[[18446744073709551616]]}', "$.gpus[0][0]"),
        (b'{"v":1,"type":"sample","t":1,"seq":0,"gpus":[[-9223372036854775809]]}', "$.gpus[0][0]"),
        (b'{"v":1,"type":"sample","t":1,"seq":0,"gpus":[[1e300]]}', "$.gpus[0][0]"),
        (b'{"v":1,"type":"sample","t":1,"seq":0,"gpus":[],"lost":[70000]}', "$.lost[0]"),
        (
            b'{"v":1,"type":"sample","t":1,"seq":0,"gpus":[],"hw":[{"x":99999999999999999999999}]}',
            "$.hw[0].x",
        ),
        (b'{"v":1,"type":"sample","t":1,"seq":0,"gpus":[],"links":[[[1e400]]]}', "$.links"),
    ],
)
def test_out_of_range_values_are_protocol_errors(line: bytes, where: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode_line(line)
    assert where in str(caught.value)


@pytest.mark.parametrize(
    "line",
    [
        b'{"v":1,"type":"event","t":1,"kind":"x\xff\xfe"}',
        b'{"v":1,"type":"event","t":1,"kind":"\xed\xa0\x80"}',  # an encoded surrogate
        b'{"v":1,"type":"bye","t":1,"reason":"\xc3"}',
    ],
)
def test_invalid_utf8_is_a_protocol_error_not_a_unicode_error(line: bytes) -> None:
    with pytest.raises(ProtocolError, match="UTF-8"):
        decode_line(line)


def test_uint64_counters_at_the_top_of_their_range_still_decode() -> None:
    line = b'{"v":1,"type":"sample","t":1,"seq":0,"gpus":[[18446744073709551615,-5,0.5]]}'
    sample = decode_line(line)
    assert isinstance(sample, Sample)
    assert sample.gpus == (((1 << 64) - 1, -5, 0.5),)  # rows and their list decode as tuples


def test_escape_sequences_in_node_strings_are_made_visible() -> None:
    line = (
        b'{"v":1,"type":"hello","t":1,"agent":"a\\u001b]0;title\\u0007","host":"h\\u202e",'
        b'"interval":1,"slow_interval":10,"gpu_fields":[],"gpu_slow_fields":[],'
        b'"port_fields":[],"nic_fields":[],'
        b'"gpus":[{"index":0,"uuid":"GPU-\\u009b2J","name":"\\u001b]52;c;aGk=\\u0007H100"}]}'
    )
    hello = decode_line(line)
    assert isinstance(hello, Hello)
    assert hello.agent == "a\\x1b]0;title\\x07"
    assert hello.host == "h\\u202e"
    assert hello.gpus[0].uuid == "GPU-\\x9b2J"
    assert hello.gpus[0].name == "\\x1b]52;c;aGk=\\x07H100"


def test_raw_control_bytes_in_utf8_are_cleaned_too() -> None:
    # DEL and C1 controls are legal raw inside JSON strings.
    line = '{"v":1,"type":"event","t":1,"kind":"xid","detail":"a\x7fb\x9bc\u2066"}'.encode()
    event = decode_line(line)
    assert isinstance(event, Event)
    assert event.detail == "a\\x7fb\\x9bc\\u2066"


def test_protocol_error_messages_are_clean_and_bounded() -> None:
    hostile_type = "\x1b]52;c;" + "A" * 1000
    line = ('{"v":1,"type":' + json.dumps(hostile_type) + ',"t":1}').encode()
    with pytest.raises(ProtocolError) as caught:
        decode_line(line)
    message = str(caught.value)
    assert "\x1b" not in message and len(message) <= 300


def test_clean_text_keeps_clean_strings_and_bounds_length() -> None:
    text = "NVIDIA H100 80GB HBM3"
    assert clean_text(text) is text
    assert clean_text("x" * 50, 10) == "x" * 9 + "\u2026"
    assert clean_text("tab\there\nnew") == "tab\\x09here\\x0anew"
    assert clean_bytes(b"bad \xff utf8 \x1b[31m") == "bad \ufffd utf8 \\x1b[31m"
