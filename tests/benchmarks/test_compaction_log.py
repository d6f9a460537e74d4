"""benchmarks.compaction reads each broker's cleanings from its log: Kafka's per-cleaning stats,
which wireserver's cleaner writes line for line (``cleaning_summary``). The wireserver line here
is the one its cleaner logs, through the same function."""

from __future__ import annotations

import types

from benchmarks.compaction import cleanings_note
from benchmarks.compare import Broker
from wireserver.log_cleaner import cleaning_summary


def test_a_wireserver_cleaning_is_read_from_its_log(tmp_path):
    stats = types.SimpleNamespace(
        elapsed_s=8.0,
        elapsed_index_s=2.0,
        bytes_read=800 * 1024 * 1024,
        bytes_written=12 * 1024 * 1024,
        map_bytes_read=800 * 1024 * 1024,
        map_utilization=0.01,
        records_read=819_200,
        records_kept=10_000,
    )
    log = tmp_path / "broker.log"
    log.write_text(
        "2026-12-07 18:50:01,000 INFO wireserver.log_cleaner: "
        + cleaning_summary(0, "compacted-0", 0, 819_200, stats)
        + "2026-12-07 18:50:02,000 INFO wireserver.log_cleaner: "
        + cleaning_summary(0, "other-0", 0, 5, stats)
    )
    broker = Broker("wireserver", "0.1.0", "127.0.0.1:9092", 1, 0.5, lambda: None, log_file=log)
    assert cleanings_note(broker, "compacted") == "its log: 800 MB in 8.0 s = 100 MB/s"
    assert cleanings_note(broker, "missing") == "no cleaning logged"
