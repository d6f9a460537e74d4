"""What the share-partition tests share: the share settings a partition is made with, and a small
committed log (the ``log`` fixture) for it to hand out records from."""

from __future__ import annotations

import pytest

from tests.storage.helpers import make_batch, open_log

SETTINGS = {
    "share.auto.offset.reset": "earliest",
    "share.delivery.count.limit": 3,
    "share.partition.max.record.locks": 100,
    "share.record.lock.duration.ms": 30000,
    "share.renew.acknowledge.enable": True,
}


@pytest.fixture
def log(tmp_path):
    """A partition log of three 2-record batches (offsets 0-1, 2-3, 4-5), all committed."""
    log = open_log(tmp_path / "t-0")
    for _ in range(3):
        log.append(make_batch(2), 0)  # offsets 0-1, 2-3, 4-5
    log.high_watermark = log.log_end_offset
    yield log
    log.close()
