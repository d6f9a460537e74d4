"""Metadata responses whose topic entries are encoded once, not on every request.

An all-topics Metadata answer of 10,000 partitions spent most of its time in kafka-python's
encoder, writing the same partition entries again on every request. A topic's partition
entries are made once per topic state (``wireserver.apis.metadata``) as a
``PartitionEntries`` list; the bytes of the topic entry holding them are kept on that list,
per version and topic-level fields, so a later answer copies them instead.

The response is encoded by kafka-python with an empty topic array, and the topic entries are
put in its place: everything after that array (``cluster_authorized_operations`` at v8-10,
``error_code`` from v13, the tagged fields from v9) has a fixed size. The answer goes out as
chunks (``writeSequence``), so the kept bytes are not copied into one buffer either.
"""

from __future__ import annotations

import collections
import struct
from typing import Any

from kafka.protocol.api_message import ApiMessage
from kafka.protocol.schemas.fields.codecs import EncodeBufferPool

from wireserver.protocol.framing import response_head

METADATA_KEY = 3
FIRST_FLEXIBLE_VERSION = 9


class PartitionEntries(list):
    """A topic's partition entries, read-only once made, with the encodings of topic entries
    that hold them: (version, error code, name, topic id, is_internal, authorized
    operations) → bytes."""

    __slots__ = ("encoded", "_error_codes")

    def __init__(self, entries=()):
        super().__init__(entries)
        self.encoded: dict[tuple, bytes] = {}
        self._error_codes: collections.Counter[int] | None = None

    def error_codes(self) -> collections.Counter[int]:
        """How many entries carry each error code (for the error meters; counted once)."""
        if self._error_codes is None:
            self._error_codes = collections.Counter(entry.error_code for entry in self)
        return self._error_codes


def _suffix_size(version: int) -> int:
    """Bytes after the topic array: cluster_authorized_operations (v8-10), error_code (v13+),
    the response's tagged fields (v9+; none are written)."""
    return (
        (4 if 8 <= version <= 10 else 0)
        + (2 if version >= 13 else 0)
        + (1 if version >= FIRST_FLEXIBLE_VERSION else 0)
    )


def _array_length(count: int, flexible: bool) -> bytes:
    if not flexible:
        return struct.pack(">i", count)
    value, out = count + 1, bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _encode_topic(topic_array: Any, version: int, flexible: bool, topic: Any) -> bytes:
    encode = topic_array.array_of.compiled_encode_into(version, compact=flexible, tagged=flexible)
    with EncodeBufferPool.acquire() as out:
        encode(topic, out)
        return bytes(out.result())


def _hashable(operations: Any) -> Any:
    """Authorized operations are a set of operation codes, or None (not asked for)."""
    return frozenset(operations) if isinstance(operations, (set, list)) else operations


def topic_bytes(topic_array: Any, version: int, topic: Any) -> bytes:
    """One topic entry's encoding, kept on its partition list when that is a
    ``PartitionEntries``."""
    flexible = version >= FIRST_FLEXIBLE_VERSION
    partitions = topic.partitions
    if not isinstance(partitions, PartitionEntries):
        return _encode_topic(topic_array, version, flexible, topic)
    key = (
        version,
        topic.error_code,
        topic.name,
        topic.topic_id,
        topic.is_internal,
        _hashable(topic.authorized_operations),
    )
    encoded = partitions.encoded.get(key)
    if encoded is None:
        encoded = partitions.encoded[key] = _encode_topic(topic_array, version, flexible, topic)
    return encoded


def encode_metadata_response(
    response: ApiMessage, version: int, correlation_id: int, header_version: int
) -> list[bytes]:
    """The framed Metadata response (size, header, body) as chunks."""
    topics = response.topics
    response._version = version
    if getattr(response, "unknown_tags", None):  # (never from our handler) then not fixed-size
        body = response.encode()
        return [response_head(len(body), correlation_id, header_version), bytes(body)]
    response.topics = []
    try:
        empty_body = bytes(response.encode())
    finally:
        response.topics = topics
    flexible = version >= FIRST_FLEXIBLE_VERSION
    empty = _array_length(0, flexible)
    end = len(empty_body) - _suffix_size(version)
    start = end - len(empty)
    if empty_body[start:end] != empty:
        raise AssertionError(f"Metadata v{version}: the topic array is not where expected")
    topic_array = type(response)._struct.fields["topics"]
    chunks = [b"", empty_body[:start], _array_length(len(topics), flexible)]
    chunks.extend(topic_bytes(topic_array, version, topic) for topic in topics)
    chunks.append(empty_body[end:])
    chunks[0] = response_head(sum(len(chunk) for chunk in chunks), correlation_id, header_version)
    return chunks
