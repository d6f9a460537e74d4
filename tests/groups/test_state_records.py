"""The group state machine's transition table, and the ``__consumer_offsets`` record formats."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wireserver.groups.records import (
    ConsumerGroupKey,
    GroupKey,
    GroupValue,
    MemberValue,
    OffsetKey,
    OffsetValue,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_value,
    encode_key,
    encode_offset_value,
    java_string_hashcode,
    kafka_abs,
    partition_for,
    subscribed_topics,
)
from wireserver.groups.state import VALID_PREVIOUS, GroupState, IllegalStateTransition, StateMachine

S = GroupState


@pytest.mark.parametrize("source", list(GroupState))
@pytest.mark.parametrize("target", list(GroupState))
def test_transitions_follow_the_table(source, target):
    machine = StateMachine("g", source)
    if source in VALID_PREVIOUS[target]:
        machine.transition_to(target)
        assert machine.state is target
    else:
        with pytest.raises(IllegalStateTransition):
            machine.transition_to(target)
        assert machine.state is source


def test_the_rebalance_cycle_is_allowed_and_shortcuts_are_not():
    machine = StateMachine("g")
    for target in (
        S.PREPARING_REBALANCE,
        S.COMPLETING_REBALANCE,
        S.STABLE,
        S.PREPARING_REBALANCE,
        S.EMPTY,
        S.DEAD,
    ):
        machine.transition_to(target)
    for source, target in [
        (S.EMPTY, S.STABLE),
        (S.EMPTY, S.COMPLETING_REBALANCE),
        (S.STABLE, S.EMPTY),
        (S.DEAD, S.EMPTY),
        (S.STABLE, S.STABLE),
    ]:
        with pytest.raises(IllegalStateTransition):
            StateMachine("g", source).transition_to(target)


def test_java_string_hashcode_matches_java():
    assert java_string_hashcode("") == 0
    assert java_string_hashcode("a") == 97
    assert java_string_hashcode("hello") == 99162322
    # The classic string whose hash is Integer.MIN_VALUE: Kafka's Utils.abs maps it to 0.
    assert java_string_hashcode("polygenelubricants") == -(1 << 31)
    assert kafka_abs(-(1 << 31)) == 0
    assert partition_for("polygenelubricants", 50) == 0
    # Characters outside the BMP count as two UTF-16 code units, as in Java.
    assert java_string_hashcode("\U0001f600") == 31 * 0xD83D + 0xDE00


def test_partition_for_known_groups():
    h = java_string_hashcode("my-group")
    assert partition_for("my-group", 50) == abs(h) % 50


def test_offset_key_value_layout():
    key = encode_key(OffsetKey("g", "t", 3))
    assert key == b"\x00\x01" + b"\x00\x01g" + b"\x00\x01t" + b"\x00\x00\x00\x03"
    value = encode_offset_value(OffsetValue(42, 5, "meta", 1000))
    assert value == (
        b"\x00\x03"
        + (42).to_bytes(8, "big")
        + (5).to_bytes(4, "big")
        + b"\x00\x04meta"
        + (1000).to_bytes(8, "big")
    )
    assert decode_key(key) == OffsetKey("g", "t", 3)
    assert decode_offset_value(value) == OffsetValue(42, 5, "meta", 1000)


def test_older_offset_value_versions_decode():
    v1 = (
        b"\x00\x01"
        + (7).to_bytes(8, "big")
        + b"\x00\x00"
        + (11).to_bytes(8, "big")
        + (99).to_bytes(8, "big")
    )
    assert decode_offset_value(v1) == OffsetValue(7, -1, "", 11, 99)
    legacy_key = b"\x00\x00" + b"\x00\x01g" + b"\x00\x01t" + b"\x00\x00\x00\x00"
    assert decode_key(legacy_key) == OffsetKey("g", "t", 0)
    assert decode_key(b"\x00\x03\x00\x01g") == ConsumerGroupKey("g")  # KIP-848 group epoch
    assert decode_key(b"\x00\x04\x00\x01g") is None  # other KIP-848 records: not kept


names = st.text(max_size=20)
blobs = st.binary(max_size=40)


@given(st.builds(OffsetKey, names, names, st.integers(0, 2**31 - 1)))
def test_offset_keys_round_trip(key):
    assert decode_key(encode_key(key)) == key


@given(
    st.builds(
        OffsetValue,
        st.integers(-1, 2**63 - 1),
        st.integers(-1, 2**31 - 1),
        names,
        st.integers(-1, 2**62),
    )
)
def test_offset_values_round_trip(value):
    assert decode_offset_value(encode_offset_value(value)) == value


members = st.builds(
    MemberValue,
    names,
    st.none() | names,
    names,
    names,
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    blobs,
    blobs,
)


@given(
    st.builds(
        GroupValue,
        names,
        st.integers(0, 10**6),
        st.none() | names,
        st.none() | names,
        st.integers(-1, 2**50),
        st.lists(members, max_size=4),
    )
)
def test_group_values_round_trip(value):
    assert decode_group_value(encode_group_value(value)) == value
    assert decode_key(encode_key(GroupKey("x"))) == GroupKey("x")


def test_subscribed_topics_reads_the_consumer_protocol():
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

    data = ConsumerProtocolSubscription(version=0, topics=["a", "b"], user_data=b"").encode(
        version=0
    )
    assert subscribed_topics(bytes(data)) == {"a", "b"}
    assert subscribed_topics(b"\x00") is None
