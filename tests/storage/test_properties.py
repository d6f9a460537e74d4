"""Hypothesis: random appends, rolls and reads always give consistent offsets."""

from __future__ import annotations

import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.storage.helpers import batches, config, make_batch, open_log


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.tuples(st.integers(1, 5), st.integers(0, 300)), min_size=1, max_size=25),
    segment_bytes=st.integers(200, 2000),
    interval=st.integers(0, 500),
    reads=st.lists(st.tuples(st.integers(0, 200), st.integers(1, 3000)), max_size=15),
    reopen=st.booleans(),
)
def test_random_appends_and_reads_are_consistent(sizes, segment_bytes, interval, reads, reopen):
    with tempfile.TemporaryDirectory() as tmp:
        cfg = config(internal_segment_bytes=segment_bytes, index_interval_bytes=interval)
        log = open_log(f"{tmp}/t-0", cfg)
        expected_end = 0
        for count, value_size in sizes:
            r = log.append(make_batch(count, value_size=value_size), 0)
            assert r.base_offset == expected_end
            expected_end += count
            assert r.last_offset == expected_end - 1
        if reopen:
            log.close()
            log = open_log(f"{tmp}/t-0", cfg, recover=True)
        assert log.log_end_offset == expected_end
        for offset, max_bytes in reads:
            offset = offset % (expected_end + 1)
            res = log.read(offset, max_bytes)
            got = batches(res.data)
            if offset == expected_end:
                assert got == []
                continue
            assert got, "min_one_batch always returns a batch below the log end"
            assert got[0].base_offset <= offset <= got[0].last_offset
            assert len(res.data) <= max_bytes or len(got) == 1
            for a, b in zip(got, got[1:]):
                assert b.base_offset == a.last_offset + 1
            assert all(b.verify_crc() for b in got)
            offsets = [rec.offset for b in got for rec in b.records()]
            assert offsets == list(range(got[0].base_offset, got[-1].last_offset + 1))
        log.close()
