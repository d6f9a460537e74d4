"""Kafka's request log: one line per completed request on the logger ``kafka.request.logger``.

Kafka's log4j configuration keeps that logger at WARN, so it says nothing until an operator
turns it on; so does this module (the logger's level is WARNING unless set otherwise, and it
propagates to the root logger's handlers). At DEBUG each completed request is logged as Kafka's
``RequestChannel`` logs it, ``Completed request:`` followed by the JSON of
``RequestConvertToJson.requestDescMetrics``: the request header, the connection, the request's
times in milliseconds (Kafka's names: ``totalTimeMs``, ``requestQueueTimeMs``, ``localTimeMs``,
``remoteTimeMs``, ``throttleTimeMs``, ``responseQueueTimeMs``, ``sendTimeMs``), the security
protocol, principal, listener and client software.

At DEBUG the ``request`` and ``response`` fields are empty strings; at TRACE (``TRACE``, level 5,
below DEBUG) they hold the bodies in Kafka's JSON (field names camelCased from Kafka's message
definitions). Record data is never written: a ``records`` field becomes Kafka's
``recordsSizeInBytes`` (KIP-673), and a Produce partition also says how many records it carried
(``recordCount``); other bytes fields (SASL tokens, SCRAM salts, group metadata) become their
size (``<name>SizeInBytes``), and config values Kafka hides (``KafkaConfig.loggableValue``)
read ``[hidden]``.

The server calls ``log_completed`` after writing each response; when the logger is off that is
one ``isEnabledFor`` check (cached by ``logging``), and the caller may make the same check
itself (``enabled()``) before gathering what to pass.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from typing import Any

REQUEST_LOGGER_NAME = "kafka.request.logger"
#: log4j's TRACE, below DEBUG: the request log with the request and response bodies.
TRACE = 5
logging.addLevelName(TRACE, "TRACE")

request_logger = logging.getLogger(REQUEST_LOGGER_NAME)
if request_logger.level == logging.NOTSET:  # an operator's own setting stays
    request_logger.setLevel(logging.WARNING)

#: Kafka's ``TimingNames`` in the order ``requestDescMetrics`` writes them.
TIMING_NAMES = (
    "totalTimeMs",
    "requestQueueTimeMs",
    "localTimeMs",
    "remoteTimeMs",
    "throttleTimeMs",
    "responseQueueTimeMs",
    "sendTimeMs",
)
#: Kafka's ``ClientInformation.EMPTY``: a client that sent no ApiVersions v3+.
UNKNOWN_CLIENT = ("unknown", "unknown")
HIDDEN = "[hidden]"  # Kafka's ``Password.HIDDEN``
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # Kafka's ``Uuid.ZERO_UUID`` (kafka-python reads it as None)
_CONFIG_APIS = {33, 44}  # AlterConfigs, IncrementalAlterConfigs
_BROKER, _TOPIC, _BROKER_LOGGER = 4, 2, 8  # ConfigResource.Type ids


def timings_ms(
    times: tuple[float, float, float, float, float, float], throttle_ms: int = 0
) -> dict[str, float]:
    """Kafka's request-log times from a request's ``wireserver.metrics.request_times_ms``,
    with the throttle time between remote and response-queue time, as Kafka's log line has
    them."""
    total, queue, local, remote, response_queue, send = times
    return {
        "totalTimeMs": total,
        "requestQueueTimeMs": queue,
        "localTimeMs": local,
        "remoteTimeMs": remote,
        "throttleTimeMs": throttle_ms,
        "responseQueueTimeMs": response_queue,
        "sendTimeMs": send,
    }


def enabled() -> bool:
    """Whether ``log_completed`` would log anything (the logger is at DEBUG or below)."""
    return request_logger.isEnabledFor(logging.DEBUG)


def log_completed(
    request: Any,
    peer: str,
    listener_name: str,
    principal: str,
    timings: dict[str, float],
    *,
    response: Any = None,
    security_protocol: str = "PLAINTEXT",
    client_information: tuple[str, str] = UNKNOWN_CLIENT,
    connection: str | None = None,
) -> None:
    """Log one completed ``request`` (``protocol.messages.Request``) from ``peer``
    (``host:port``) on ``listener_name`` by ``principal`` (``User:ANONYMOUS``), with
    ``timings`` in milliseconds under Kafka's names (``TIMING_NAMES``; a missing one is 0).
    ``response`` (the handler's answer, None for acks=0) is shown at TRACE only.
    ``connection``: Kafka's connection id (``local-peer-index``), else the peer."""
    if not request_logger.isEnabledFor(logging.DEBUG):
        return
    details = request_logger.isEnabledFor(TRACE)
    node: dict[str, Any] = {
        "isForwarded": False,
        "requestHeader": header_node(request),
        "request": request_node(request) if details else "",
        "response": response_node(request, response) if details and response is not None else "",
        "connection": connection or peer,
    }
    for name in TIMING_NAMES:
        value = timings.get(name, 0)
        node[name] = int(value) if name == "throttleTimeMs" else round(float(value), 3)
    node["securityProtocol"] = security_protocol
    node["principal"] = principal
    node["listener"] = listener_name
    node["clientInformation"] = {
        "softwareName": client_information[0],
        "softwareVersion": client_information[1],
    }
    request_logger.debug("Completed request:%s", json.dumps(node, separators=(",", ":")))


def api_key_name(api_name: str) -> str:
    """Kafka's ``ApiKeys`` constant for an API name: ``ApiVersions`` -> ``API_VERSIONS``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", api_name).upper()


def header_node(request: Any) -> dict[str, Any]:
    """Kafka's ``requestHeaderNode``: the header's fields and the API's constant name."""
    header = request.header
    return {
        "requestApiKey": header.api_key,
        "requestApiVersion": header.api_version,
        "correlationId": header.correlation_id,
        "clientId": header.client_id,
        "requestApiKeyName": api_key_name(request.spec.name),
    }


def request_node(request: Any) -> Any:
    """The request body in Kafka's JSON, without record data (see the module docstring)."""
    body = request.body
    if body is None:
        return ""
    if request.spec.key == 0 and hasattr(body, "topic_data"):
        return _produce_node(body)
    node = message_node(body)
    if request.spec.key in _CONFIG_APIS and isinstance(node, dict):
        _hide_sensitive_configs(node)
    return node


def response_node(request: Any, response: Any) -> Any:
    """The response in Kafka's JSON, without record data (fetch responses' records become
    ``recordsSizeInBytes``)."""
    return message_node(response)


def message_node(message: Any) -> Any:
    """A kafka-python message (or nested struct) as Kafka's generated ``JsonConverter``
    writes it: the fields of its version, camelCased from Kafka's field names."""
    struct = getattr(message, "_struct", None)
    if struct is None:
        return _value(message)
    version = getattr(message, "_version", None)
    node: dict[str, Any] = {}
    for field in struct._fields:
        if version is not None and not field.for_version_q(version):
            continue
        name = _json_name(field)
        value = getattr(message, field.name, None)
        type_str = getattr(field, "type_str", "")
        if type_str == "records":
            if value is None:
                node[name] = None
            else:
                node[name + "SizeInBytes"] = _size(value)
        elif type_str == "bytes" or isinstance(value, bytes | bytearray | memoryview):
            if value is None:
                node[name] = None
            else:
                node[name + "SizeInBytes"] = _size(value)
        elif type_str == "uuid" and value is None:
            node[name] = ZERO_UUID
        elif isinstance(value, list):
            node[name] = [message_node(v) for v in value]
        else:
            node[name] = message_node(value) if hasattr(value, "_struct") else _value(value)
    return node


def _json_name(field: Any) -> str:
    """Kafka's JSON name of a field: its message-definition name with a lower-case first
    letter (``TopicData`` -> ``topicData``); kafka-python keeps the definition in ``_json``."""
    definition = getattr(field, "_json", None)
    name = definition.get("name") if isinstance(definition, dict) else None
    if not name:
        first, *rest = field.name.split("_")
        return first + "".join(part.capitalize() for part in rest)
    return name[0].lower() + name[1:]


def _value(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, uuid.UUID):
        from wireserver.storage.checkpoint import topic_id_to_base64

        return topic_id_to_base64(value)
    if isinstance(value, dict):
        return {str(k): _value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_value(v) for v in value]
    return str(value)  # UUIDs and the like, as Kafka prints them as strings


def _size(value: Any) -> int:
    try:
        return len(value)
    except TypeError:
        return int(getattr(value, "size", 0) or 0)


def _produce_node(body: Any) -> dict[str, Any]:
    """A Produce body summarized: per partition its size and record count, never records."""
    return {
        "transactionalId": body.transactional_id,
        "acks": body.acks,
        "timeoutMs": body.timeout_ms,
        "topicData": [
            {
                "name": topic.name,
                **({"topicId": _value(topic.topic_id)} if topic.topic_id is not None else {}),
                "partitionData": [
                    {
                        "index": partition.index,
                        **_records_summary(partition.records),
                    }
                    for partition in topic.partition_data
                ],
            }
            for topic in body.topic_data
        ],
    }


def _records_summary(records: Any) -> dict[str, Any]:
    if records is None:
        return {"records": None}
    from wireserver.storage.batches import iter_headers

    try:
        count = sum(header.record_count for _, header in iter_headers(records))
    except (ValueError, IndexError):  # not whole batches: the handler refused it anyway
        count = -1
    return {"recordsSizeInBytes": len(records), "recordCount": count}


def _hide_sensitive_configs(node: dict[str, Any]) -> None:
    """Kafka's ``loggableRequest`` for (Incremental)AlterConfigs: a value whose config may be
    sensitive (a password, or a key it does not know) reads ``[hidden]``."""
    from wireserver.config import BROKER_CONFIGS
    from wireserver.storage.log_config import TOPIC_CONFIGS

    for resource in node.get("resources") or ():
        kind = resource.get("resourceType")
        for config in resource.get("configs") or ():
            name = config.get("name", "")
            if kind == _BROKER_LOGGER:
                continue
            if kind == _BROKER:
                cdef = BROKER_CONFIGS.get(name)
                hidden = cdef is None or cdef.sensitive
            elif kind == _TOPIC:
                hidden = name not in TOPIC_CONFIGS
            else:
                hidden = True
            if hidden and config.get("value") is not None:
                config["value"] = HIDDEN
