"""Shared helpers for storage tests: batches built with protocol.records' builder."""

from __future__ import annotations

from wireserver.protocol.records import RecordBatch, RecordBatchBuilder, iter_batches
from wireserver.storage.log import Log
from wireserver.storage.log_config import LogConfig


class FakeClock:
    def __init__(self, now: int = 1_000_000):
        self.now = now

    def __call__(self) -> int:
        return self.now


def make_batch(
    count: int = 1, ts: int = 1000, value_size: int = 20, ts_step: int = 1, compression: int = 0
) -> bytearray:
    builder = RecordBatchBuilder(compression=compression)
    for i in range(count):
        builder.append(ts + i * ts_step, b"key-%d" % i, bytes([65 + i % 26]) * value_size)
    return builder.build()


def config(**overrides) -> LogConfig:
    return LogConfig.from_values({}, {k.replace("_", "."): str(v) for k, v in overrides.items()})


def open_log(
    path,
    cfg: LogConfig | None = None,
    clock: FakeClock | None = None,
    *,
    recover: bool = False,
    **kwargs,
) -> Log:
    return Log.open(
        str(path), cfg or config(), now_ms=clock or FakeClock(), recover=recover, **kwargs
    )


def batches(data: bytes) -> list[RecordBatch]:
    return list(iter_batches(memoryview(data)))


def record_offsets(data: bytes) -> list[int]:
    return [r.offset for b in batches(data) for r in b.records()]
