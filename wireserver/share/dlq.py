"""Dead-letter queues of share groups (KIP-1191), as Kafka 4.4's ``ShareGroupDLQStateManager``
writes them: a record a member rejects, or whose delivery count reaches
``share.delivery.count.limit``, is archived and a dead-letter record for it is appended to the
group's ``errors.deadletterqueue.topic.name``. Nothing happens for a group that names no topic
(the default), and a record given up for any other reason (a gap, a transaction marker, an
aborted transaction's record) is archived without one, as Kafka.

The dead-letter record has the time it was written as its timestamp, the source record's key
and value when the group sets ``errors.deadletterqueue.copy.record.enable`` (else none), and
Kafka's context headers, in Kafka's order: ``__dlq.errors.topic``, ``__dlq.errors.partition``,
``__dlq.errors.offset``, ``__dlq.errors.group``, ``__dlq.errors.delivery.count`` and
``__dlq.errors.message`` ("Offset rejected by client." or "Offset delivery count exceeded the
threshold."). Kafka 4.4 does not copy the source record's headers, nor does this. The records
of one acknowledgement (or one lock expiry) go to partition ``source partition % partitions``
of the DLQ topic in one uncompressed batch (more when the topic's ``max.message.bytes`` needs
it), through the partition layer's leader append, as Kafka's broker sends itself a Produce
(acks=all).

The topic is checked first, in Kafka's order and with its messages: a name starting ``__``
(also refused when the group config is set), an existing topic without
``errors.deadletterqueue.group.enable=true``, a missing topic while the broker's
``errors.deadletterqueue.auto.create.topics.enable`` is false, a name outside the broker's
``errors.deadletterqueue.topic.name.prefix`` (``dlq.`` by default; empty allows any). A missing
topic that passes is created with the broker defaults, ``errors.deadletterqueue.group.enable=true``
and ``message.timestamp.type=CreateTime``. Whatever fails, the records are archived all the same
and the failure is logged ("Failed to write to DLQ, proceeding to ARCHIVED regardless."), as
Kafka's ``SharePartition.initiateDLQAndArchive`` does: a record that cannot be dead-lettered
must not hold the share-partition's start offset back.

Only the archived records are read back from the source log, and only when the group copies
them; the fetch path is untouched. When this broker leads the DLQ partition the append is done
before the acknowledgement is answered, so there is no in-between ARCHIVING state to persist
(Kafka's write goes through its network client and comes back later); in a cluster, when
another broker leads it, the batch goes there in a Produce and the records are archived
without waiting for its answer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from twisted.internet import defer

from wireserver.protocol.records import HEADER_SIZE, RecordBatchBuilder, iter_batches
from wireserver.storage.errors import OffsetOutOfRange

log = logging.getLogger(__name__)

TOPIC_NAME = "errors.deadletterqueue.topic.name"
COPY_RECORD = "errors.deadletterqueue.copy.record.enable"
TOPIC_ENABLE = "errors.deadletterqueue.group.enable"
AUTO_CREATE = "errors.deadletterqueue.auto.create.topics.enable"
TOPIC_PREFIX = "errors.deadletterqueue.topic.name.prefix"

#: The ``__dlq.errors.message`` of Kafka's ``ShareGroupDLQManager`` causes.
CLIENT_REJECT = "Offset rejected by client."
DELIVERY_COUNT_EXCEEDED = "Offset delivery count exceeded the threshold."

#: (offset, delivery count) of an archived record
DeadLetter = tuple[int, int]

#: what a dead-letter record adds to its key and value, at most (record framing, the header
#: names and small values, without the topic and group names, counted apart)
_RECORD_OVERHEAD = 160


def _failed(
    group_id: str, topic: str, partition: int, letters: list[DeadLetter], exc: BaseException
) -> None:
    log.error(
        "Failed to write to DLQ, proceeding to ARCHIVED regardless. Share group %s, "
        "%s-%d offsets %d to %d: %s",
        group_id,
        topic,
        partition,
        letters[0][0],
        letters[-1][0],
        exc,
    )


class DeadLetterError(Exception):
    """The DLQ topic cannot be written, with Kafka's message."""


class DeadLetterQueue:
    """``setting(group, name)``: a group config with its default; ``config``: the broker's;
    ``logs``: the log manager (``topics``, ``get_log``); ``append(topic, partition, batch,
    topic_config)``: the partition layer's leader append (raises on failure), or in a cluster,
    for a partition led elsewhere, a Produce to its leader (a Deferred that fails on failure);
    ``create_topic(name, configs)``: a topic with the broker's partitions and replication
    factor (raises ``TopicError``); ``now_ms()``: the clock."""

    def __init__(
        self,
        setting: Callable[[str, str], Any],
        config: Any,
        logs: Any,
        append: Callable[[str, int, bytes, Any], Any],
        create_topic: Callable[[str, dict[str, str]], Any],
        now_ms: Callable[[], int],
    ):
        self.setting = setting
        self.config = config
        self.logs = logs
        self.append = append
        self.create_topic = create_topic
        self.now_ms = now_ms

    def topic_of(self, group_id: str) -> str | None:
        """The group's DLQ topic, None when it has none (Kafka's ``isDLQEnabledForGroup``)."""
        name = str(self.setting(group_id, TOPIC_NAME) or "").strip()
        return name or None

    def write(
        self, group_id: str, topic: str, partition: int, letters: list[DeadLetter], cause: str
    ) -> None:
        """Dead-letter ``letters`` of ``topic``-``partition`` for the group, if it has a DLQ
        topic; a failure is logged, never raised (the records are archived regardless)."""
        name = self.topic_of(group_id)
        if name is None or not letters:
            return
        letters = sorted(letters)
        try:
            info = self._destination(group_id, name)
            copies = self._sources(topic, partition, letters) if self._copies(group_id) else {}
            target = partition % info.num_partitions
            context = (topic.encode(), str(partition).encode(), group_id.encode(), cause.encode())
            for batch in self._batches(letters, copies, context, info.config.max_message_bytes):
                sent = self.append(name, target, batch, info.config)
                if isinstance(sent, defer.Deferred):
                    sent.addErrback(lambda f: _failed(group_id, topic, partition, letters, f.value))
        except Exception as exc:  # noqa: BLE001 - whatever fails, the records are archived
            _failed(group_id, topic, partition, letters, exc)

    def _copies(self, group_id: str) -> bool:
        return bool(self.setting(group_id, COPY_RECORD))

    def _destination(self, group_id: str, name: str) -> Any:
        """The DLQ topic's ``TopicInfo``, after Kafka's ``validateDlqTopic``; created when it
        is missing and may be."""
        if name.startswith("__"):
            raise DeadLetterError(
                f"Configured DLQ topic name in share group: {group_id} cannot start with __, "
                f"topic: {name}."
            )
        info = self.logs.topics.get(name)
        if info is not None and not info.config.errors_deadletterqueue_group_enable:
            raise DeadLetterError(
                f"DLQ is not enabled on configured DLQ topic for share group: {group_id}, "
                f"topic: {name}."
            )
        if info is None and not self.config[AUTO_CREATE]:
            raise DeadLetterError(
                f"DLQ topic does not exist and auto create is disabled on cluster for share "
                f"group: {group_id}, topic: {name}."
            )
        prefix = str(self.config[TOPIC_PREFIX] or "")
        if prefix and not name.startswith(prefix):
            raise DeadLetterError(
                f"Configured DLQ topic name does not comply with the DLQ topic prefix in share "
                f"group: {group_id}, topic: {name}, prefix: {prefix}."
            )
        if info is None:
            info = self.create_topic(
                name, {TOPIC_ENABLE: "true", "message.timestamp.type": "CreateTime"}
            )
        return info

    def _sources(self, topic: str, partition: int, letters: list[DeadLetter]) -> dict[int, Any]:
        """The source records of ``letters`` still in the log, by offset (Kafka's
        ``ShareGroupDLQRecordFetcher``); one gone (retention) gets a record of headers only."""
        source = self.logs.get_log(topic, partition)
        wanted = {offset for offset, _ in letters}
        found: dict[int, Any] = {}
        if source is None:
            return found
        offset, last = letters[0][0], letters[-1][0]
        while offset <= last:
            try:
                read = source.read(
                    max(offset, source.log_start_offset), 1 << 20, upper_bound=source.high_watermark
                )
            except OffsetOutOfRange:
                break
            data = bytes(read.data)
            if not data:
                break
            for batch in iter_batches(data):
                if batch.is_control or batch.last_offset < offset:
                    continue
                for record in batch.records():
                    if record.offset in wanted:
                        found[record.offset] = record
            offset = max(offset + 1, read.next_offset)
        return found

    def _batches(
        self,
        letters: list[DeadLetter],
        copies: dict[int, Any],
        context: tuple[bytes, bytes, bytes, bytes],
        max_bytes: int,
    ) -> Iterable[bytes]:
        """The dead-letter batches of ``letters``: as many records a batch as
        ``max.message.bytes`` holds (at least one), all with the time of writing."""
        topic, partition, group, cause = context
        now = self.now_ms()
        fixed = _RECORD_OVERHEAD + len(topic) + len(group) + len(cause)
        builder, size = RecordBatchBuilder(), HEADER_SIZE
        for offset, delivery_count in letters:
            record = copies.get(offset)
            key = record.key if record is not None else None
            value = record.value if record is not None else None
            record_size = fixed + len(key or b"") + len(value or b"")
            if builder.record_count and size + record_size > max_bytes:
                yield bytes(builder.build())
                builder, size = RecordBatchBuilder(), HEADER_SIZE
            headers = [
                ("__dlq.errors.topic", topic),
                ("__dlq.errors.partition", partition),
                ("__dlq.errors.offset", str(offset).encode()),
                ("__dlq.errors.group", group),
                ("__dlq.errors.delivery.count", str(delivery_count).encode()),
                ("__dlq.errors.message", cause),
            ]
            builder.append(now, key, value, headers)
            size += record_size
        if builder.record_count:
            yield bytes(builder.build())
