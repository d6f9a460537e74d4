"""Hypothesis strategies that build any kafka-python message at any version, by walking the
message's schema (the same Apache Kafka JSON definitions the classes are generated from)."""

from __future__ import annotations

import uuid

from hypothesis import strategies as st
from kafka.protocol.schemas.fields.codecs import (
    UUID,
    BitField,
    Boolean,
    Bytes,
    Float64,
    Int8,
    Int16,
    Int32,
    Int64,
    UnsignedInt16,
)

_INTS = {
    Int8: (-(2**7), 2**7 - 1),
    Int16: (-(2**15), 2**15 - 1),
    UnsignedInt16: (0, 2**16 - 1),
    Int32: (-(2**31), 2**31 - 1),
    Int64: (-(2**63), 2**63 - 1),
}
_TEXT = st.text(max_size=12)
_BYTES = st.binary(max_size=24)


def _simple(field_type, type_str: str):
    if field_type in _INTS:
        lo, hi = _INTS[field_type]
        return st.integers(lo, hi)
    if field_type is Boolean:
        return st.booleans()
    if field_type is Float64:
        return st.floats(allow_nan=False)
    if field_type is UUID:
        return st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1))
    if field_type is BitField:
        # Authorized-operations sets; None is Kafka's INT32_MIN, "not requested".
        return st.one_of(st.none(), st.sets(st.integers(0, 30), max_size=4))
    if field_type is Bytes:
        return _BYTES
    if type_str == "string":
        return _TEXT
    raise NotImplementedError(f"no strategy for {type_str}")


def _nullable(field, version: int, strategy):
    if field.nullable_for_version_q(version):
        return st.one_of(st.none(), strategy)
    return strategy


def field_strategy(field, version: int, compact: bool):
    if field.is_struct_array():
        items = st.lists(struct_strategy(field.array_of, version, compact), max_size=2)
        return _nullable(field, version, items)
    if field.is_array():
        inner = field.array_of
        items = st.lists(_simple(inner._type, inner._type_str), max_size=3)
        return _nullable(field, version, items)
    if field.is_struct():
        return _nullable(field, version, struct_strategy(field, version, compact))
    return _nullable(field, version, _simple(field._type, field._type_str))


def struct_strategy(struct_field, version: int, compact: bool, data_class=None, top_level=False):
    cls = data_class or struct_field.data_class
    fields = {}
    for field in struct_field._fields:
        if not field.for_version_q(version):
            continue
        strategy = field_strategy(field, version, compact)
        if field.tagged_field_q(version):
            # A tagged field is either absent (its default) or present with a value.
            strategy = st.one_of(st.just(_ABSENT), strategy)
        fields[field.name] = strategy

    def build(values):
        values = {k: v for k, v in values.items() if v is not _ABSENT}
        if top_level:
            return cls(version=version, **values)
        obj = cls(**values)
        obj._version = version
        return obj

    return st.fixed_dictionaries(fields).map(build)


_ABSENT = object()


def message_strategy(message_class, version: int):
    flexible = message_class.flexible_version_q(version)
    return struct_strategy(
        message_class._struct, version, flexible, data_class=message_class, top_level=True
    )
