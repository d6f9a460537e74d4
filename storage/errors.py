"""Exceptions raised by storage/. Each carries the Kafka ``error_code`` a handler should answer."""

from __future__ import annotations

from wireserver.protocol.errors import ErrorCode


class StorageError(Exception):
    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class OffsetOutOfRange(StorageError):
    """A fetch or DeleteRecords offset outside [log start offset, log end offset]."""

    error_code = ErrorCode.OFFSET_OUT_OF_RANGE

    def __init__(
        self, offset: int, log_start_offset: int, log_end_offset: int, message: str | None = None
    ):
        super().__init__(
            message or (f"offset {offset} is out of range [{log_start_offset}, {log_end_offset}]")
        )
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class InvalidOffset(StorageError):
    """A follower append whose offsets do not continue the log."""

    error_code = ErrorCode.UNKNOWN_SERVER_ERROR


class InvalidTopicError(StorageError, ValueError):
    """A topic name breaking Kafka's rules, or colliding with an existing one ('.' vs '_')."""

    error_code = ErrorCode.INVALID_TOPIC_EXCEPTION


class TopicExistsError(StorageError):
    error_code = ErrorCode.TOPIC_ALREADY_EXISTS


class UnknownTopicError(StorageError, KeyError):
    error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message readable
        return str(self.args[0]) if self.args else ""


class InvalidPartitionsError(StorageError, ValueError):
    error_code = ErrorCode.INVALID_PARTITIONS


class LogInvariantError(StorageError, AssertionError):
    """log start offset <= high watermark <= log end offset was about to be broken."""


class KafkaStorageError(StorageError):
    """Kafka's ``KafkaStorageException``: an I/O error in a log dir (ENOSPC, EIO, EMFILE...),
    or an operation on a log whose dir is offline since such an error. The partition's answer
    is KAFKA_STORAGE_ERROR; the dir stays offline until the broker restarts
    (``storage.log_dir_failure``)."""

    def __init__(self, message: str, log_dir: str):
        super().__init__(message)
        self.log_dir = log_dir


class LogDirNotFoundError(StorageError):
    """Kafka's ``LogDirNotFoundException``: a log dir that is not in ``log.dirs``."""


# The producer-state errors live here, in a module the compiled build leaves interpreted: a class
# attribute that a subclass of an interpreted exception sets in a mypyc-compiled module reads as
# the base class's (OutOfOrderSequence answered KAFKA_STORAGE_ERROR there).


class OutOfOrderSequence(StorageError):
    error_code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpoch(StorageError):
    error_code = ErrorCode.INVALID_PRODUCER_EPOCH


class TransactionCoordinatorFenced(StorageError):
    """A marker from a coordinator older than the last one that wrote a marker for the
    producer here (Kafka's ``ProducerAppendInfo.checkCoordinatorEpoch``)."""

    error_code = ErrorCode.TRANSACTION_COORDINATOR_FENCED
