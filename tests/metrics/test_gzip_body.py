"""/metrics' gzip (ISA-L) is standard gzip: the gzip tool and Python's zlib read it back."""

from __future__ import annotations

import gzip
import shutil
import subprocess

from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.gzip_body import gzip_stream, gzipped

EXPOSITION = b"".join(
    b'gpufleet_gpu_utilization_ratio{node="node-%05d",gpu="%d"} 0.%02d\n' % (n, g, (n * g) % 100)
    for n in range(400)
    for g in range(8)
)


def _streamed(pieces: list[bytes]) -> bytes:
    stream = gzip_stream()
    return b"".join([stream.compress(piece) for piece in pieces] + [stream.flush()])


def test_the_gzip_tool_reads_a_streamed_body_back() -> None:
    gzip_tool = shutil.which("gzip")
    assert gzip_tool is not None, "gzip is essential on Debian: every install has it"
    pieces = [EXPOSITION[i : i + 4096] for i in range(0, len(EXPOSITION), 4096)]
    zipped = _streamed(pieces)
    out = subprocess.run([gzip_tool, "-dc"], input=zipped, capture_output=True, check=True)
    assert out.stdout == EXPOSITION
    assert len(zipped) < len(EXPOSITION) // 5  # compressed, not stored


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=3000), max_size=12))
def test_any_pieces_come_back_whole_and_in_order(pieces: list[bytes]) -> None:
    assert gzip.decompress(_streamed(pieces)) == b"".join(pieces)
    assert gzip.decompress(gzipped(b"".join(pieces))) == b"".join(pieces)
