"""A decoded sample's rows leave the cyclic collector's view once it has looked at them.

The state keeps each node's latest sample rows for a tick or more; as lists (the
decoder's ``list[Row]``) every full collection scanned ~6 of them per node, 5,866 of
the 6,875 objects not frozen in a 1,000-node fleet (/tmp bench of the runtime, 25
ticks). As tuples of tuples of numbers, collections untrack them.
"""

from __future__ import annotations

import gc

from collectors.protocol import Sample, decode_line

LINE = (
    b'{"type":"sample","v":1,"t":1800000000.5,"seq":7,'
    b'"gpus":[[87,41,72.5,30.1],null,[88,40,71.0,29.0]],'
    b'"ports":[[4,5,400.0,0,0]],"nics":[[4,5,100.0,0,0]],"lost":[1],'
    b'"slow":[[1,2,3.5],null,[1,2,3.5]]}'
)


def test_a_decoded_samples_rows_are_untracked_after_a_collection() -> None:
    sample = decode_line(LINE)
    assert isinstance(sample, Sample)
    # The first collection untracks the rows, the second their tuple (which the first
    # may look at before the rows it holds).
    gc.collect()
    gc.collect()
    kept = [sample.gpus, sample.ports, sample.nics, sample.lost, sample.slow]
    assert [gc.is_tracked(part) for part in kept] == [False] * len(kept)
    assert sample.gpus[0] == (87, 41, 72.5, 30.1) and sample.gpus[1] is None
    assert sample.lost == (1,)
