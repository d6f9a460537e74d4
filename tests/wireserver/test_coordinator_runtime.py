"""The coordinator runtime (``wireserver.coordinator_runtime``) on real partition logs in a
temporary directory, a real replica manager and a Twisted ``Clock``: key -> partition, creating
the internal topic, appending then replaying, loading on one node, and in a cluster loading on
election and unloading on resignation."""

from __future__ import annotations

import time

import pytest

from tests.small_fs import fill, small_filesystem
from tests.wireserver.runtime_host import Host, fired
from wireserver import coordinator_runtime
from wireserver.coordinator_runtime import (
    CoordinatorRuntime,
    InternalTopic,
    Load,
    java_string_hashcode,
    kafka_abs,
    partition_for,
)
from wireserver.protocol.errors import ErrorCode

E = ErrorCode
NAME = "__test_state"
TOPIC = InternalTopic(
    NAME,
    "offsets.topic.num.partitions",
    "offsets.topic.replication.factor",
    lambda config: {"cleanup.policy": "compact"},
    commit_timeout_config="offsets.commit.timeout.ms",
    keys="key(s)",
)


class Shard:
    """A coordinator keeping the latest value of each key, and what the runtime asked of it."""

    def __init__(self) -> None:
        self.runtime: CoordinatorRuntime | None = None
        self.values: dict[int, dict[bytes, bytes | None]] = {}
        self.calls: list[tuple] = []
        self.seen_while_loading: list[ErrorCode | None] = []
        #: The partitions whose loads ran to their end (and applied what they read), in order.
        self.completed: list[int] = []
        #: What each load saw of every partition as it began, and a hook run at each step.
        self.all_seen_while_loading: list[list[ErrorCode | None]] = []
        self.on_step = lambda: None

    def load_partition(self, partition: int, to_log_end: bool = False) -> Load:
        """Read the partition a batch a step; what it found is kept at the last."""
        assert self.runtime is not None
        self.calls.append(("load", partition, to_log_end))
        self.seen_while_loading.append(self.runtime.coordinator_error(partition))
        self.all_seen_while_loading.append(
            [self.runtime.coordinator_error(p) for p in range(self.runtime.num_partitions())]
        )
        found: dict[bytes, bytes | None] = {}
        for batch, position in self.runtime.batches(partition, to_log_end):
            yield
            self.on_step()
            for record in batch.records():
                if record.offset >= position:
                    found[bytes(record.key)] = None if record.value is None else bytes(record.value)
        self.values.setdefault(partition, {}).update(found)
        self.completed.append(partition)
        return len(found)

    def unload_partition(self, partition: int) -> int:
        self.calls.append(("unload", partition))
        return len(self.values.pop(partition, {}))


def make_runtime(
    host: Host, reload_on_reelection: bool = False, background: bool = False
) -> tuple[CoordinatorRuntime, Shard, list]:
    created: list = []

    def create_topic(
        name: str, partitions: int, replication: int, configs: dict[str, str]
    ) -> ErrorCode | None:
        created.append((name, partitions, replication, configs))
        host.logs.create_topic(name, partitions, configs)
        return None

    shard = Shard()
    runtime = CoordinatorRuntime(
        host,
        TOPIC,
        shard,
        create_topic,
        reload_on_reelection,
        reactor=host.clock if background else None,
    )
    shard.runtime = runtime
    return runtime, shard, created


def key_in(runtime: CoordinatorRuntime, partition: int) -> str:
    """A key that lands on ``partition``."""
    return next(
        k for k in (f"key-{i}" for i in range(1000)) if runtime.partition_for(k) == partition
    )


def test_a_key_goes_to_the_partition_kafka_chooses(tmp_path):
    assert java_string_hashcode("hello") == 99162322
    assert partition_for("hello", 50) == 99162322 % 50
    # String.hashCode is Integer.MIN_VALUE here, and Kafka's Utils.abs maps that to 0.
    assert java_string_hashcode("polygenelubricants") == -(1 << 31)
    assert kafka_abs(-(1 << 31)) == 0 and partition_for("polygenelubricants", 7) == 0
    host = Host(tmp_path, clustered=False, partitions=5)
    runtime, _, _ = make_runtime(host)
    # Before the topic exists, the configured count decides; afterwards the topic's own.
    assert runtime.num_partitions() == 5
    assert runtime.partition_for("hello") == 99162322 % 5
    host.logs.create_topic(NAME, 3, {})
    assert runtime.num_partitions() == 3
    assert runtime.partition_for("hello") == 99162322 % 3


def test_one_node_creates_the_topic_on_first_use_and_coordinates_every_key(tmp_path):
    host = Host(tmp_path, clustered=False)
    runtime, _, created = make_runtime(host)
    assert runtime.ensure_ready("anything") is None
    assert created == [(NAME, 3, 1, {"cleanup.policy": "compact"})]
    assert runtime.ensure_ready() is None and len(created) == 1  # once
    assert all(runtime.coordinator_error(p) is None for p in range(3))


def test_the_topic_is_refused_while_its_replication_exceeds_the_live_brokers(tmp_path):
    host = Host(tmp_path, clustered=False, **{"offsets.topic.replication.factor": "3"})
    runtime, _, created = make_runtime(host)
    assert runtime.ensure_ready() == E.COORDINATOR_NOT_AVAILABLE
    assert runtime.append("k", [(b"k", b"v")]) == E.COORDINATOR_NOT_AVAILABLE
    assert created == []


def test_append_then_replay_on_one_node(tmp_path, monkeypatch):
    host = Host(tmp_path, clustered=False)
    runtime, shard, _ = make_runtime(host)
    key = key_in(runtime, 1)
    assert runtime.append(key, []) == E.NONE  # nothing to write: not even the topic
    assert NAME not in host.logs.topics
    for i in range(20):
        assert runtime.append(key, [(b"a", b"%d" % i), (b"b", b"x" * 200)]) == E.NONE
    assert runtime.append(key, [(b"b", None)]) == E.NONE  # a tombstone
    assert runtime.append(key, [(b"t", b"txn")], producer=(7, 0)) == E.NONE
    partition_log = host.logs.get_log(NAME, 1)
    assert partition_log.high_watermark == partition_log.log_end_offset == 42  # committed
    assert fired(runtime.replicated(key)) == [E.NONE]  # at once on one node
    batches = [batch for batch, _ in runtime.batches(1)]
    assert len(batches) == 22 and batches[-1].is_transactional
    assert batches[-1].producer_id == 7 and not batches[0].is_transactional
    # The chunked read sees each batch once, however small the chunks.
    monkeypatch.setattr(coordinator_runtime, "LOAD_CHUNK_BYTES", 300)
    assert [b.base_offset for b, _ in runtime.batches(1)] == [b.base_offset for b in batches]
    assert list(runtime.batches(0)) == []  # an empty partition
    runtime.load_all()
    assert shard.calls == [("load", 0, False), ("load", 1, False), ("load", 2, False)]
    assert shard.values[1] == {b"a": b"19", b"b": None, b"t": b"txn"}


def test_one_node_loads_every_partition_at_start(tmp_path):
    host = Host(tmp_path, clustered=False)
    runtime, _, _ = make_runtime(host)
    assert runtime.append(key_in(runtime, 2), [(b"k", b"v")]) == E.NONE
    again, shard, _ = make_runtime(host)
    again.start()
    assert [c for c in shard.calls if c[0] == "load"] == [("load", p, False) for p in range(3)]
    assert shard.values[2] == {b"k": b"v"}
    assert host.replicas._listeners == {}  # nothing to follow on one node


def test_with_a_reactor_one_node_serves_at_once_and_loads_in_the_background(tmp_path):
    """Kafka's start-up: the partitions load one after another on the reactor, their keys
    answered COORDINATOR_LOAD_IN_PROGRESS (and any request about every key) until loaded."""
    host = Host(tmp_path, clustered=False)
    writer, _, _ = make_runtime(host)
    for partition in (0, 2):
        for i in range(5):
            assert writer.append(key_in(writer, partition), [(b"k", b"%d" % i)]) == E.NONE
    runtime, shard, _ = make_runtime(host, background=True)
    runtime.start()
    assert shard.calls == []  # nothing before the reactor runs
    assert [runtime.coordinator_error(p) for p in range(3)] == [E.COORDINATOR_LOAD_IN_PROGRESS] * 3
    assert runtime.ensure_ready(key_in(runtime, 1)) == E.COORDINATOR_LOAD_IN_PROGRESS
    assert runtime.loading_error() == E.COORDINATOR_LOAD_IN_PROGRESS
    assert runtime.append(key_in(runtime, 1), [(b"x", b"y")]) == E.NONE  # appends go on
    host.clock.advance(0)
    assert [c for c in shard.calls if c[0] == "load"] == [("load", p, False) for p in range(3)]
    # Each began with those before it loaded and those after it still loading.
    L = E.COORDINATOR_LOAD_IN_PROGRESS
    assert shard.all_seen_while_loading == [[L, L, L], [None, L, L], [None, None, L]]
    assert shard.values == {0: {b"k": b"4"}, 1: {b"x": b"y"}, 2: {b"k": b"4"}}
    assert [runtime.coordinator_error(p) for p in range(3)] == [None] * 3
    assert runtime.loading_error() is None and runtime.loading == set()


def test_a_background_load_reads_what_is_appended_while_it_runs(tmp_path, monkeypatch):
    host = Host(tmp_path, clustered=False, partitions=1)
    writer, _, _ = make_runtime(host)
    for i in range(3):
        assert writer.append("k", [(b"k%d" % i, b"old")]) == E.NONE
    runtime, shard, _ = make_runtime(host, background=True)
    appended = iter([(b"late", b"marker")])

    def append_once() -> None:
        entry = next(appended, None)
        if entry is not None:
            assert writer.append("k", [entry]) == E.NONE

    shard.on_step = append_once
    monkeypatch.setattr(coordinator_runtime, "LOAD_CHUNK_BYTES", 1)  # a batch a chunk
    runtime.start()
    host.clock.advance(0)
    assert shard.values[0] == {b"k0": b"old", b"k1": b"old", b"k2": b"old", b"late": b"marker"}


def written_while_led(host: Host, runtime: CoordinatorRuntime, shard: Shard, batches: int) -> None:
    """Partition 1 led at epoch 4 and loaded, ``batches`` batches appended to it, then resigned
    and what the shard loaded of it forgotten."""
    host.replicas.make_leader((NAME, 1), 4, [1], [1])
    host.clock.advance(0)
    key = key_in(runtime, 1)
    for i in range(batches):
        assert runtime.append(key, [(b"k", b"%d" % i)]) == E.NONE
    host.replicas.resign((NAME, 1))
    shard.values.clear()


def test_a_partition_resigned_while_it_loads_is_dropped_and_the_next_loads(tmp_path, caplog):
    host, runtime, shard = cluster_runtime(tmp_path, background=True)
    written_while_led(host, runtime, shard, batches=3)

    # Elected again, then resigned at the load's first step: nothing of it is kept, and the
    # partitions queued behind it load.
    host.replicas.make_leader((NAME, 1), 5, [1], [1])
    host.replicas.make_leader((NAME, 2), 5, [1], [1])
    assert runtime.coordinator_error(1) == E.COORDINATOR_LOAD_IN_PROGRESS
    assert shard.completed == [1]  # the first load, in written_while_led
    steps: list[int] = []

    def resign_at_first_step() -> None:
        steps.append(len(steps))
        host.replicas.resign((NAME, 1))

    shard.on_step = resign_at_first_step
    host.clock.advance(0)
    assert shard.calls[-3:] == [("load", 1, True), ("unload", 1), ("load", 2, True)]
    # One step of partition 1's three batches ran; its load never ended; partition 2's did.
    assert steps == [0] and shard.completed == [1, 2]
    # Exactly partition 2's (empty) values: the dropped load put none of its keys back after
    # the unload took partition 1's away.
    assert shard.values == {2: {}}
    assert runtime.coordinator_error(1) == E.NOT_COORDINATOR and runtime.owned == {2}
    assert runtime.coordinator_error(2) is None and runtime.loading == set()

    # A load that fails leaves its partition NOT_COORDINATOR, logged; the others go on.
    def broken(partition: int, to_log_end: bool = False) -> Load:
        yield
        raise RuntimeError("unreadable")

    shard.load_partition = broken  # type: ignore[method-assign]
    host.replicas.make_leader((NAME, 0), 5, [1], [1])
    host.clock.advance(0)
    assert runtime.coordinator_error(0) == E.NOT_COORDINATOR and runtime.owned == {2}
    assert "loading __test_state-0 failed" in caplog.text


def test_a_resignation_between_two_steps_applies_nothing_of_the_load(tmp_path):
    """The reactor runs between a load's steps, and a resignation there must stop the load
    before its next step, which here is its last (the one that applies what it read)."""
    host, runtime, shard = cluster_runtime(tmp_path, background=True)
    written_while_led(host, runtime, shard, batches=2)  # two batches: two steps
    steps: list[int] = []

    def first_step_ends_the_slice() -> None:
        steps.append(1)
        if len(steps) == 1:
            # The resignation comes from the reactor, after this step's slice.
            host.clock.callLater(0, host.replicas.resign, (NAME, 1))
            time.sleep(0.02)  # longer than the Cooperator's slice: the tick ends here

    shard.on_step = first_step_ends_the_slice
    host.replicas.make_leader((NAME, 1), 5, [1], [1])
    host.clock.advance(0)
    assert steps == [1]  # the second batch's step never ran
    assert shard.completed == [1]  # only the load before the election: this one never ended
    assert shard.values == {} and runtime.loading == set()  # nothing of the dropped load
    assert runtime.coordinator_error(1) == E.NOT_COORDINATOR


def cluster_runtime(tmp_path, **kw) -> tuple[Host, CoordinatorRuntime, Shard]:
    host = Host(tmp_path, clustered=True)
    host.logs.create_topic(NAME, 3, {})  # as the cluster node does from ZooKeeper
    host.cluster.topics[NAME] = object()
    runtime, shard, _ = make_runtime(host, **kw)
    runtime.start()
    return host, runtime, shard


def test_in_a_cluster_election_loads_a_partition_and_resignation_unloads_it(tmp_path):
    host, runtime, shard = cluster_runtime(tmp_path)
    assert shard.calls == []  # nothing is loaded before this broker leads a partition
    key = key_in(runtime, 1)
    assert runtime.ensure_ready(key) == E.NOT_COORDINATOR
    assert runtime.append(key, [(b"k", b"v")]) == E.NOT_COORDINATOR

    host.replicas.make_leader((NAME, 1), 4, [1], [1])
    assert shard.calls == [("load", 1, True)]
    assert shard.seen_while_loading == [E.COORDINATOR_LOAD_IN_PROGRESS]
    assert runtime.owned == {1} and runtime.coordinator_epochs == {1: 4}
    assert runtime.ensure_ready(key) is None
    assert runtime.coordinator_error(0) == E.NOT_COORDINATOR
    assert runtime.append(key, [(b"k", b"v")]) == E.NONE
    assert fired(runtime.replicated(key)) == [E.NONE]  # the ISR is this broker alone
    assert [b.partition_leader_epoch for b, _ in runtime.batches(1)] == [4]  # as the leader

    host.replicas.make_leader((NAME, 1), 5, [1], [1])  # re-elected: kept as it is
    assert shard.calls == [("load", 1, True)]

    host.replicas.resign((NAME, 1))
    assert shard.calls[-1] == ("unload", 1)
    assert runtime.owned == set() and runtime.coordinator_epochs == {}
    assert runtime.ensure_ready(key) == E.NOT_COORDINATOR

    host.replicas.make_leader((NAME, 1), 6, [1], [1])  # elected again: loads what was written
    assert shard.calls[-1] == ("load", 1, True) and shard.values[1] == {b"k": b"v"}


def test_a_coordinator_may_reload_on_reelection(tmp_path):
    host, runtime, shard = cluster_runtime(tmp_path, reload_on_reelection=True)
    host.replicas.make_leader((NAME, 0), 1, [1], [1])
    host.replicas.make_leader((NAME, 0), 2, [1], [1])
    assert shard.calls == [("load", 0, True), ("unload", 0), ("load", 0, True)]
    assert runtime.coordinator_epochs == {0: 2}


def test_a_load_that_fails_leaves_the_partition_unowned(tmp_path):
    host, runtime, shard = cluster_runtime(tmp_path)

    def broken(partition: int, to_log_end: bool = False) -> Load:
        yield
        raise RuntimeError("unreadable")

    shard.load_partition = broken  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        runtime.on_election(0, 1)
    assert runtime.owned == set() and runtime.loading == set()
    assert runtime.coordinator_error(0) == E.NOT_COORDINATOR


def test_in_a_cluster_an_append_is_answered_once_the_isr_has_it(tmp_path):
    host, runtime, _ = cluster_runtime(tmp_path)
    host.cluster.brokers = {1: None, 2: None}
    host.replicas.make_leader((NAME, 2), 1, [1, 2], [1, 2])
    key = key_in(runtime, 2)
    assert runtime.append(key, [(b"k", b"v")]) == E.NONE
    first = fired(runtime.replicated(key))
    assert first == []  # broker 2 has not fetched it
    host.replicas.follower_fetched((NAME, 2), 2, 1)
    assert first == [E.NONE]
    assert runtime.append(key, [(b"k", b"w")]) == E.NONE
    second = fired(runtime.replicated(key))
    host.clock.advance(0.6)  # offsets.commit.timeout.ms
    assert second == [E.COORDINATOR_NOT_AVAILABLE]
    assert runtime.append(key, [(b"k", b"x")]) == E.NONE
    third = fired(runtime.replicated(key))
    host.replicas.resign((NAME, 2))
    host.clock.advance(0.6)
    assert third == [E.NOT_COORDINATOR]


def test_an_append_on_a_full_disk_is_not_coordinator(tmp_path):
    """Kafka's coordinators map KAFKA_STORAGE_ERROR to NOT_COORDINATOR (the client looks for
    the coordinator again; this broker is about to halt). A real tmpfs, filled."""
    with small_filesystem(tmp_path / "fs", "512k") as mount:
        host = Host(mount, clustered=False)
        runtime, _, _ = make_runtime(host)
        key = key_in(runtime, 1)
        assert runtime.append(key, [(b"a", b"1")]) == E.NONE
        fill(mount)
        assert runtime.append(key, [(b"a", b"x" * 65536)]) == E.NOT_COORDINATOR
        assert host.logs.failures.is_offline(mount)
        assert runtime.append(key, [(b"a", b"2")]) == E.NOT_COORDINATOR  # offline since
        assert host.logs.get_log(NAME, 1).log_end_offset == 1
