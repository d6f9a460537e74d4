"""What a leader checks of a client's batch before it goes into the log (Kafka's
``LogValidator`` and ``analyzeAndValidateRecords``), next to the log it protects.

The produce path reads batch headers only: size against ``max.message.bytes``, CRC-32C, magic,
the record count against the offset delta, no control batches from clients, a sequence for an
idempotent producer, and the batch's base and max timestamps against
``message.timestamp.before/after.max.ms``. Records are decoded only where Kafka's rules need
them: a compacted topic walks its records up to each key, since every record needs one.

Every refusal is a ``BatchError`` with Kafka's error code for the partition; nothing is
written.
"""

from __future__ import annotations

from typing import Any

from wireserver.protocol.errors import (
    CorruptRecordBatch,
    DecodeError,
    ErrorCode,
    TruncatedRecordBatch,
    UnsupportedMagic,
)
from wireserver.protocol.records import RecordBatch, iter_batches
from wireserver.storage.batches import BatchHeader, read_header


class BatchError(Exception):
    """A partition's answer when its batch is refused. ``record_errors`` are (index in the
    batch, message) pairs, KIP-467's per-record errors; Kafka sends them with the partition's
    log start offset, other errors with -1."""

    def __init__(
        self,
        code: ErrorCode,
        message: str | None = None,
        record_errors: list[tuple[int, str]] | tuple = (),
        log_start_offset: int = -1,
    ):
        super().__init__(message or code.name)
        self.code = code
        self.message = message
        self.record_errors = list(record_errors)
        self.log_start_offset = log_start_offset


def writable(records: Any) -> Any:
    """The buffer the append stamps offsets into, in place: a writable view of the request
    frame (one that arrived over several reads, see ``protocol.framing``) is used as it is,
    anything else copied once."""
    if records is None:
        raise BatchError(ErrorCode.INVALID_RECORD, "The produce request has no records.")
    if isinstance(records, memoryview) and not records.readonly:
        return records
    return bytearray(records)


def validate_batches(records: Any, config: Any, now_ms: int) -> list[tuple[int, BatchHeader]]:
    """Check the batches of one partition's records from their headers (Produce v3+ allows
    exactly one); returns the (position, header) of each, which ``Log.append`` takes rather
    than reading them again."""
    headers: list[tuple[int, BatchHeader]] = []
    position = 0
    try:
        for batch in iter_batches(records):
            # the header's fields in one unpack (each RecordBatch property unpacks its own)
            header = read_header(batch.buffer)
            headers.append((position, header))
            position += header.size
            if header.size > config.max_message_bytes:
                raise BatchError(
                    ErrorCode.MESSAGE_TOO_LARGE,
                    f"The batch of {header.size} bytes exceeds max.message.bytes "
                    f"({config.max_message_bytes}).",
                )
            if not batch.verify_crc():
                raise BatchError(ErrorCode.CORRUPT_MESSAGE, "The record batch fails its CRC check.")
            try:
                batch.validate(strict=True, check_crc=False)  # its CRC passed just above
            except CorruptRecordBatch as exc:
                raise BatchError(ErrorCode.INVALID_RECORD, str(exc)) from None
            if header.is_control:
                raise BatchError(
                    ErrorCode.INVALID_RECORD, "Clients are not allowed to write control records."
                )
            if header.producer_id >= 0 and header.base_sequence < 0:
                raise BatchError(
                    ErrorCode.INVALID_RECORD,
                    f"Invalid sequence number {header.base_sequence} in record "
                    f"batch with producerId {header.producer_id}",
                )
            if config.message_timestamp_type == "CreateTime":
                if (
                    header.max_timestamp > now_ms + config.message_timestamp_after_max_ms
                    or header.base_timestamp < now_ms - config.message_timestamp_before_max_ms
                ):
                    raise BatchError(
                        ErrorCode.INVALID_TIMESTAMP,
                        "Timestamp of the batch is out of the acceptable range "
                        "(message.timestamp.before.max.ms / after.max.ms).",
                    )
    except UnsupportedMagic as exc:
        raise BatchError(ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, str(exc)) from None
    except TruncatedRecordBatch as exc:
        raise BatchError(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None
    except DecodeError as exc:
        raise BatchError(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None
    if not headers:
        raise BatchError(ErrorCode.INVALID_RECORD, "The produce request has no record batch.")
    if len(headers) > 1:
        raise BatchError(
            ErrorCode.INVALID_RECORD,
            "Produce requests with version 3+ may contain exactly one record batch per partition.",
        )
    return headers


def validate_keys(buf: Any, topic: str, partition: int, log_start_offset: int) -> None:
    """A compacted topic refuses records without a key (Kafka's ``LogValidator.validateKey``):
    the whole batch fails with INVALID_RECORD and its record errors name every keyless record,
    with Kafka's texts."""
    try:
        keyless = RecordBatch(memoryview(buf)).keyless_records()
    except CorruptRecordBatch as exc:
        raise BatchError(
            ErrorCode.INVALID_RECORD, str(exc), log_start_offset=log_start_offset
        ) from None
    if not keyless:
        return
    reason = (
        f"Compacted topic cannot accept message without key in topic partition {topic}-{partition}"
    )
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{reason}')" for i in keyless[:3])
    raise BatchError(
        ErrorCode.INVALID_RECORD,
        f"One or more records have been rejected due to {len(keyless)} record "
        f"errors in total, and only showing the first three errors at most: "
        f"[{shown}]",
        [(i, reason) for i in keyless],
        log_start_offset,
    )
