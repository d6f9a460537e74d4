"""Producer id allocation (Kafka's ``ProducerIdManager``), unique across restarts.

Ids are handed out from blocks of ``BLOCK_SIZE`` (1000, Kafka's ``PRODUCER_ID_BLOCK_SIZE``).
Before the first id of a new block is handed out, the start of the *next* block is written
durably (tmp file, fsync, rename, fsync dir) to ``wireserver-producer-id-block`` in the first
log dir, so after a crash or restart allocation resumes past every id that may have been
handed out. A restart wastes what is left of the current block, as in Kafka.

The file is JSON: ``{"version": 1, "next_block_start": N}``. Kafka keeps the same fact in
ZooKeeper (``/latest_producer_id_block``) or the KRaft metadata log
(``ProducerIdsRecord.nextProducerId``); once clustering lands, blocks will be reserved in
ZooKeeper the same way and this file stays the single-node store.
"""

from __future__ import annotations

import json
import os

from wireserver.storage.checkpoint import atomic_write
from wireserver.storage.log_dir_failure import LogDirFailureChannel

BLOCK_SIZE = 1000
FILE_NAME = "wireserver-producer-id-block"
FILE_VERSION = 1
#: Kafka refuses to allocate past Long.MAX_VALUE - block size.
MAX_PRODUCER_ID = 2**63 - 1 - BLOCK_SIZE


class ProducerIdsExhausted(RuntimeError):
    pass


class ProducerIdManager:
    """``failures``: the log dirs' failure channel; the block file is in a log dir, so an I/O
    error writing it (a full disk) takes that dir offline as any log write does, and
    ``generate`` raises ``KafkaStorageError``."""

    def __init__(
        self,
        log_dir: str,
        block_size: int = BLOCK_SIZE,
        failures: LogDirFailureChannel | None = None,
    ):
        self.log_dir = os.path.abspath(log_dir)
        self.failures = failures if failures is not None else LogDirFailureChannel()
        self.path = os.path.join(log_dir, FILE_NAME)
        self.block_size = block_size
        self._durable_next = self._read()  # no id at or above this was ever handed out
        self._next = 0
        self._block_end = 0  # empty block: the first generate() reserves one

    def _read(self) -> int:
        if not os.path.exists(self.path):
            return 0
        with open(self.path, encoding="utf-8") as f:
            doc = json.load(f)  # a damaged file stops the broker: ids could repeat otherwise
        if doc.get("version") != FILE_VERSION:
            raise ValueError(f"{self.path}: unknown version {doc.get('version')!r}")
        start = int(doc["next_block_start"])
        if start < 0:
            raise ValueError(f"{self.path}: negative next_block_start {start}")
        return start

    def _reserve_block(self) -> None:
        start = self._durable_next
        if start > MAX_PRODUCER_ID:
            raise ProducerIdsExhausted("producer ids are exhausted")
        end = start + self.block_size
        with self.failures.guard(self.log_dir, f"Error while writing {self.path}"):
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            atomic_write(
                self.path, json.dumps({"version": FILE_VERSION, "next_block_start": end}) + "\n"
            )
        self._durable_next = end
        self._next, self._block_end = start, end

    def generate(self) -> int:
        """A producer id never handed out before."""
        if self._next >= self._block_end:
            self._reserve_block()
        producer_id = self._next
        self._next += 1
        return producer_id

    @property
    def next_block_start(self) -> int:
        return self._durable_next
