"""DescribeClientQuotas and AlterClientQuotas as the quota tests send them on a raw connection,
the match types of a filter component, and the throttle time a producer is told while a quota
is in force."""

from __future__ import annotations

from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest

from tests.integration import raw
from wireserver.testing import KafkaWire

EXACT, DEFAULT, ANY = 0, 1, 2


def alter(wire, entries, validate_only=False, version=1):
    """AlterClientQuotas of ``entries`` [(entity {type: name}, {key: value or None})]:
    [(error code, message)] per entry."""
    entry_class = AlterClientQuotasRequest.EntryData
    request = AlterClientQuotasRequest(
        version=version,
        validate_only=validate_only,
        entries=[
            entry_class(
                entity=[
                    entry_class.EntityData(entity_type=kind, entity_name=entity_name)
                    for kind, entity_name in entity.items()
                ],
                ops=[
                    entry_class.OpData(key=key, value=value or 0.0, remove=value is None)
                    for key, value in ops.items()
                ],
            )
            for entity, ops in entries
        ],
    )
    response = wire.request(request)
    return [(entry.error_code, entry.error_message) for entry in response.entries]


def describe(wire, components, strict=False, version=1):
    """DescribeClientQuotas: (error code, message, {entity as sorted tuple: {key: value}})."""
    component_class = DescribeClientQuotasRequest.ComponentData
    request = DescribeClientQuotasRequest(
        version=version,
        strict=strict,
        components=[
            component_class(entity_type=kind, match_type=match_type, match=match)
            for kind, match_type, match in components
        ],
    )
    response = wire.request(request)
    found = {
        tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)): {
            value.key: value.value for value in entry.values
        }
        for entry in response.entries or []
    }
    return response.error_code, response.error_message, found


def produce_throttle_ms(
    bootstrap: str, client_id: str, topic: str, requests: int = 3, expect_ok: bool = True
) -> int:
    """The first throttle_time_ms above 0 of up to ``requests`` raw 20 kB produces by
    ``client_id``, else 0 (the broker then mutes the connection that long: this client sends
    nothing more)."""
    with KafkaWire(bootstrap, client_id=client_id) as wire:
        raw.ensure_topic(wire, topic)
        for _ in range(requests):
            response = wire.request(raw.produce(topic, {0: raw.v2_batch([b"x" * 20000])}))
            if expect_ok:
                assert raw.produce_errors(response) == {0: 0}
            if response.throttle_time_ms > 0:
                return response.throttle_time_ms
    return 0
