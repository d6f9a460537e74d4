"""What the campaign proves, from the clients' histories and from the logs after healing (the
checks of Jepsen's queue and Kafka checkers):

- every acknowledged record is read, once, at the offset its acknowledgement gave, and one
  producer's records sit in a partition in the order it sent them;
- read_committed never returns a record of an aborted transaction, nor of one that is not
  committed in the end; every committed transaction is read whole, once;
- every replica of every partition holds the same bytes as the leader below the high watermark
  (read from the log files themselves, not through the broker under test);
- committed group offsets, as sampled during the run, never go backwards.

Nothing here imports the broker's storage code: the checker does not trust what it checks.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import struct
import time
from collections import defaultdict

from confluent_kafka import Consumer, TopicPartition


def load(path: str) -> list[dict]:
    entries = []
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                try:
                    entries.append(json.loads(line))
                except ValueError:  # a line cut short by a kill
                    pass
    except FileNotFoundError:
        pass
    return entries


def read_topic(
    bootstrap: str, topic: str, partitions: int, committed_only: bool, timeout: float = 120.0
) -> dict[int, list[tuple[int, str]]]:
    """Every record of ``topic`` from offset 0 up to the end, as {partition: [(offset, value)]}."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "chaos-checker",
            "enable.auto.commit": False,
            "isolation.level": "read_committed" if committed_only else "read_uncommitted",
            "enable.partition.eof": True,
        }
    )
    try:
        ends = {}
        for p in range(partitions):
            ends[p] = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        records: dict[int, list[tuple[int, str]]] = {p: [] for p in range(partitions)}
        done: set[int] = {p for p, end in ends.items() if end == 0}
        deadline = time.monotonic() + timeout
        while len(done) < partitions:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}: read only partitions {sorted(done)} to the end")
            msg = consumer.poll(1)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == -191:  # _PARTITION_EOF
                    position = consumer.position([TopicPartition(topic, msg.partition())])[0]
                    if position.offset >= ends[msg.partition()]:
                        done.add(msg.partition())
                continue
            partition_records = records[msg.partition()]
            if partition_records and msg.offset() <= partition_records[-1][0]:
                continue  # given again (the consumer fetched again after a leader change)
            partition_records.append((msg.offset(), msg.value().decode()))
        return records
    finally:
        consumer.close()


@dataclasses.dataclass
class ProducerVerdict:
    acknowledged: int = 0
    lost: list[str] = dataclasses.field(default_factory=list)
    duplicated: list[str] = dataclasses.field(default_factory=list)
    wrong_offset: list[str] = dataclasses.field(default_factory=list)
    reordered: int = 0
    unacknowledged_present: int = 0  # failed or unanswered sends that were written: allowed


def _identity(value: str) -> tuple[str, int]:
    """(producer, sequence) of a workload's value: ``ID-SEQ`` (ours) or ``N.SEQ`` (Kafka's
    verifiable producer)."""
    if "-" in value:
        producer, _, seq = value.rpartition("-")
    else:
        producer, _, seq = value.partition(".")
    return producer, int(seq)


def check_producers(histories: list[list[dict]], log: dict[int, list[tuple[int, str]]]):
    acked: dict[str, tuple[int, int]] = {}
    for history in histories:
        for entry in history:
            if entry.get("k") == "ack":
                acked[entry["v"]] = (entry["p"], entry["o"])
    where: dict[str, list[tuple[int, int]]] = defaultdict(list)
    verdict = ProducerVerdict(acknowledged=len(acked))
    for partition, records in log.items():
        last_seq: dict[str, int] = {}
        for offset, value in records:
            where[value].append((partition, offset))
            producer, seq = _identity(value)
            if producer in last_seq and seq < last_seq[producer]:
                verdict.reordered += 1
            last_seq[producer] = seq
    for value, position in acked.items():
        found = where.get(value)
        if not found:
            verdict.lost.append(value)
        elif position[1] is None:
            # librdkafka's implicit ack: a batch whose answer was lost is delivered without an
            # offset once a later batch of the partition succeeds (rd_kafka_dr_implicit_ack).
            continue
        elif position not in found:
            verdict.wrong_offset.append(value)
    verdict.duplicated = sorted(
        f"{v} at {', '.join(f'{p}/{o}' for p, o in found)}"
        for v, found in where.items()
        if len(found) > 1
    )
    verdict.unacknowledged_present = sum(1 for v in where if v not in acked)
    verdict.lost.sort()
    return verdict


@dataclasses.dataclass
class TxnVerdict:
    committed: int = 0
    aborted: int = 0
    unknown: int = 0
    committed_lost: list[str] = dataclasses.field(default_factory=list)
    duplicated: list[str] = dataclasses.field(default_factory=list)
    aborted_read: list[str] = dataclasses.field(default_factory=list)  # by the final read
    partial: list[int] = dataclasses.field(default_factory=list)  # unknown, seen in part
    uncommitted_read: list[str] = dataclasses.field(default_factory=list)  # by a live reader


def check_transactions(
    producers: list[list[dict]], readers: list[list[dict]], log: dict[int, list[tuple[int, str]]]
) -> TxnVerdict:
    verdict = TxnVerdict()
    seen: dict[str, int] = defaultdict(int)
    for records in log.values():
        for _, value in records:
            seen[value] += 1
    not_committed: set[str] = set()
    for history in producers:
        for entry in history:
            if entry.get("k") != "txn":
                continue
            values = entry["vals"]
            outcome = entry["out"]
            present = [v for v in values if seen.get(v)]
            if outcome == "commit":
                verdict.committed += 1
                verdict.committed_lost += [v for v in values if not seen.get(v)]
            elif outcome == "abort":
                verdict.aborted += 1
                verdict.aborted_read += present
                not_committed.update(values)
            else:
                verdict.unknown += 1
                if present and len(present) != len(values):
                    verdict.partial.append(entry["n"])
                if not present:
                    not_committed.update(values)
    verdict.duplicated = sorted(v for v, n in seen.items() if n > 1)
    for history in readers:
        for entry in history:
            if entry.get("k") == "read" and entry["v"] in not_committed:
                verdict.uncommitted_read.append(entry["v"])
    return verdict


def check_offsets(samples: list[tuple[float, dict[int, int]]]) -> list[str]:
    """Committed offsets that went backwards between two samples, as readable lines."""
    backwards = []
    last: dict[int, int] = {}
    for t, offsets in samples:
        for partition, offset in offsets.items():
            if offset < 0:
                continue
            if partition in last and offset < last[partition]:
                backwards.append(f"partition {partition}: {last[partition]} -> {offset} at {t:.1f}")
            last[partition] = offset
    return backwards


# -- replicas, from the log files -------------------------------------------------------------

_HEADER = struct.Struct(">qi")  # baseOffset, batchLength


def log_batches(partition_dir: str) -> dict[int, bytes]:
    """{base offset: the whole batch's bytes} over every segment of one partition directory."""
    batches = {}
    for path in sorted(glob.glob(os.path.join(partition_dir, "*.log"))):
        with open(path, "rb") as handle:
            data = handle.read()
        position = 0
        while position + _HEADER.size <= len(data):
            base, length = _HEADER.unpack_from(data, position)
            end = position + 12 + length
            if length <= 0 or end > len(data):
                break
            batches[base] = data[position:end]
            position = end
    return batches


def last_offset(batch: bytes) -> int:
    base = struct.unpack_from(">q", batch, 0)[0]
    return base + struct.unpack_from(">i", batch, 23)[0]


def divergent_replicas(
    data_dirs: dict[int, str], topic: str, partition: int, leader: int, high_watermark: int
) -> list[int]:
    """Brokers whose copy of ``topic-partition`` differs from the leader's below the high
    watermark (a batch missing, extra, or with other bytes)."""

    def below(batches: dict[int, bytes]) -> dict[int, bytes]:
        return {b: data for b, data in batches.items() if last_offset(data) < high_watermark}

    copies = {
        broker: below(log_batches(os.path.join(path, f"{topic}-{partition}")))
        for broker, path in data_dirs.items()
    }
    reference = copies[leader]
    return sorted(broker for broker, copy in copies.items() if copy != reference)
