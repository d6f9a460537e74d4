"""Request decoding and response encoding on top of kafka-python's message classes.

The request header is parsed here rather than by kafka-python, whose header path copies the
whole frame into a ``BytesIO`` first; the body is then decoded straight from the frame's
``memoryview`` by kafka-python's compiled decoder for that version, except Produce's, which
``protocol.produce_request`` decodes so that its record batches stay views of the frame.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from kafka.protocol.api_message import ApiMessage

from wireserver.protocol.errors import DecodeError, UnsupportedApi
from wireserver.protocol.fetch_request import decode_fetch_request
from wireserver.protocol.fetch_response import encode_fetch_response
from wireserver.protocol.framing import response_head
from wireserver.protocol.metadata_response import METADATA_KEY, encode_metadata_response
from wireserver.protocol.produce_request import (
    ProduceRequestBody,
    decode_produce_request,
    skip_tagged_fields,
)
from wireserver.protocol.produce_response import encode_produce_response
from wireserver.protocol.registry import ApiRegistry, ApiSpec

PRODUCE_KEY = 0
API_VERSIONS_KEY = 18
FETCH_KEY = 1
_FIXED = struct.Struct(">hhi")  # api_key, api_version, correlation_id
_INT16 = struct.Struct(">h")


# The classes made for every request are dataclasses for their repr and equality, with an
# ``__init__`` of their own: the compiled build (setup.py) compiles a hand-written
# ``__init__``, while the one ``dataclass`` generates stays interpreted, about 0.2 us more for
# each object (five of them per Produce request).


@dataclass(slots=True, init=False)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header_version: int

    def __init__(
        self,
        api_key: int,
        api_version: int,
        correlation_id: int,
        client_id: str | None,
        header_version: int,
    ) -> None:
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.client_id = client_id
        self.header_version = header_version


@dataclass(slots=True, init=False)
class Request:
    """A decoded request. ``body`` is None only for an ApiVersions request at a version we
    don't serve, which is answered without reading its body (KIP-511)."""

    header: RequestHeader
    spec: ApiSpec
    body: ApiMessage | ProduceRequestBody | None

    def __init__(
        self, header: RequestHeader, spec: ApiSpec, body: ApiMessage | ProduceRequestBody | None
    ) -> None:
        self.header = header
        self.spec = spec
        self.body = body

    @property
    def api_version(self) -> int:
        return self.header.api_version


def peek_header(frame: memoryview) -> tuple[int, int, int]:
    """api_key, api_version and correlation_id: the fixed 8 bytes every request starts with."""
    if len(frame) < 8:
        raise DecodeError(f"request of {len(frame)} bytes is shorter than a request header")
    return _FIXED.unpack_from(frame, 0)


def decode_request_header(frame: memoryview, header_version: int) -> tuple[RequestHeader, int]:
    """Parse request header v1 or v2. ``client_id`` is the non-compact nullable string in both
    (Kafka kept it so, so that ApiVersions stays readable whatever the version)."""
    api_key, api_version, correlation_id = peek_header(frame)
    pos = 8
    if pos + 2 > len(frame):
        raise DecodeError("truncated client_id length")
    (size,) = _INT16.unpack_from(frame, pos)
    pos += 2
    if size < -1:
        raise DecodeError(f"invalid client_id length {size}")
    if size == -1:
        client_id = None
    else:
        if pos + size > len(frame):
            raise DecodeError("truncated client_id")
        try:
            client_id = str(frame[pos : pos + size], "utf-8")
        except UnicodeDecodeError as exc:
            raise DecodeError(f"client_id is not UTF-8: {exc}") from None
        pos += size
    if header_version >= 2:
        pos = skip_tagged_fields(frame, pos, len(frame))
    return RequestHeader(api_key, api_version, correlation_id, client_id, header_version), pos


def decode_body(spec: ApiSpec, version: int, frame: memoryview, pos: int) -> ApiMessage:
    """Decode a request body from ``frame[pos:]`` with kafka-python's compiled decoder.

    Any failure in the decoder (kafka-python raises struct.error, IndexError, ValueError, ...
    on malformed input) becomes a DecodeError, the one error the server has to handle."""
    cls = spec.request_class
    flexible = spec.is_flexible(version)
    decoder = cls._struct.compiled_decode_from(
        version, compact=flexible, tagged=flexible, data_class=cls
    )
    try:
        body, end = decoder(frame, pos)
    except DecodeError:
        raise
    except Exception as exc:  # noqa: BLE001 - kafka-python's decoders raise many types
        raise DecodeError(
            f"malformed {spec.name} v{version} request: {type(exc).__name__}: {exc}"
        ) from None
    if end > len(frame):
        raise DecodeError(f"{spec.name} v{version} request is truncated")
    body._version = version
    return body


def decode_request(frame: memoryview, registry: ApiRegistry) -> Request:
    """Decode one request frame (without its size prefix).

    Raises UnsupportedApi for an API key we don't serve or an unsupported version of any API
    but ApiVersions (the server closes the connection, as Kafka does), and DecodeError for
    anything malformed."""
    api_key, api_version, _ = peek_header(frame)
    spec = registry.get(api_key)
    if spec is None:
        raise UnsupportedApi(api_key, api_version)
    served = spec.serves(api_version)
    if not served and not (api_key == API_VERSIONS_KEY and api_version > spec.max_version):
        raise UnsupportedApi(api_key, api_version)
    header, pos = decode_request_header(frame, spec.request_header_version(api_version))
    if not served:
        return Request(header, spec, None)
    if api_key == PRODUCE_KEY:  # records stay views of the frame (protocol.produce_request)
        return Request(header, spec, decode_produce_request(frame, pos, api_version))
    if api_key == FETCH_KEY:  # thousands of partitions without an object each
        return Request(header, spec, decode_fetch_request(frame, pos, api_version))
    return Request(header, spec, decode_body(spec, api_version, frame, pos))


def encode_response(
    spec: ApiSpec, version: int, correlation_id: int, response: ApiMessage
) -> bytes:
    """Encode ``response`` with its size prefix and the response header version that
    ``spec`` prescribes for ``version``."""
    response._version = version
    body = response.encode()  # a bytearray; transports want immutable bytes: one copy, here
    head = response_head(len(body), correlation_id, spec.response_header_version(version))
    return b"".join((head, body))


def encode_response_chunks(
    spec: ApiSpec, version: int, correlation_id: int, response: ApiMessage
) -> list[bytes]:
    """The framed response as chunks for ``writeSequence``. Fetch goes through the hand-written
    encoder that passes records through without copying them, Produce through the one for its
    many partition entries (``protocol.produce_response``), Metadata through the one that
    keeps topic entries' bytes (``protocol.metadata_response``); everything else is one
    chunk."""
    if spec.key == PRODUCE_KEY:
        return encode_produce_response(
            response, version, correlation_id, spec.response_header_version(version)
        )
    if spec.key == FETCH_KEY:
        return encode_fetch_response(response, version, correlation_id)
    if spec.key == METADATA_KEY:
        return encode_metadata_response(
            response, version, correlation_id, spec.response_header_version(version)
        )
    return [encode_response(spec, version, correlation_id, response)]


def fetch_replica_id(body: Any, version: int) -> int:
    """The replica id of a Fetch body (in ``replica_state`` from v15): >= 0 from a follower,
    -1 from a consumer."""
    if version >= 15:
        state = getattr(body, "replica_state", None)
        return state.replica_id if state is not None else -1
    return body.replica_id


def make_response(spec: ApiSpec, version: int, **fields: Any) -> ApiMessage:
    """Build a response body of ``spec``'s type at ``version``."""
    return spec.response_class(version=version, **fields)
