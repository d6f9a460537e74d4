"""The stepping of replica moves between log dirs (wireserver.replica.alter_log_dirs) on a
``Clock``: a step copies one step's worth in all, the moving partitions take turns, and nothing
is copied while the move throttle is exceeded."""

from __future__ import annotations

from twisted.internet.task import Clock

from tests.storage.helpers import FakeClock, make_batch
from wireserver.config import BrokerConfig
from wireserver.quotas.replication import ReplicationQuotas
from wireserver.replica.alter_log_dirs import STEP_BYTES, AlterLogDirsMover
from wireserver.storage.manager import LogManager


def moving(tmp_path, partitions: int = 2):
    """A manager with ``partitions`` logs of 3 MiB each, all starting to move."""
    dirs = [str(tmp_path / "a"), str(tmp_path / "b")]
    manager = LogManager(dirs, {}, FakeClock())
    manager.load()
    for p in range(partitions):
        manager.prefer_log_dir(("t", p), dirs[0])
    manager.create_topic("t", partitions)
    for p in range(partitions):
        log = manager.get_log("t", p)
        for _ in range(3 * 16):
            log.append(make_batch(64, value_size=1000), 0)
        manager.move_log(("t", p), dirs[1])
    return manager


def copied(manager) -> list[int]:
    return [move.future.size_bytes for _, move in sorted(manager.moves.items())]


def test_a_step_copies_one_step_in_all_and_the_partitions_take_turns(tmp_path):
    manager = moving(tmp_path)
    clock = Clock()
    quotas = ReplicationQuotas(BrokerConfig(), 1, lambda: int(clock.seconds() * 1000))
    mover = AlterLogDirsMover(manager, quotas.alter_log_dirs, clock)
    # One step at a time (Clock.advance would also run the steps each step schedules).
    mover._step()
    first = copied(manager)
    assert 0 < sum(first) <= STEP_BYTES + 70_000  # one step, whole batches
    assert first[0] > 10 * first[1]  # the first took (nearly) all of it
    mover._step()
    second = copied(manager)
    assert second[1] - first[1] > 10 * (second[0] - first[0])  # then the other's turn
    mover.stop()


def test_nothing_is_copied_while_the_throttle_is_exceeded(tmp_path):
    manager = moving(tmp_path, partitions=1)
    clock = Clock()
    config = BrokerConfig()
    config.set_dynamic("replica.alter.log.dirs.io.max.bytes.per.second", "100000")
    quotas = ReplicationQuotas(config, 1, lambda: int(clock.seconds() * 1000))
    mover = AlterLogDirsMover(manager, quotas.alter_log_dirs, clock)
    mover.wake()
    for _ in range(20):  # far more than the first windows allow at once
        clock.advance(0)
    held = copied(manager)
    assert 0 < held[0] <= 2 * STEP_BYTES
    for _ in range(20):
        clock.advance(0.05)  # one second later: about 100000 bytes more are allowed
    assert copied(manager)[0] - held[0] <= STEP_BYTES + 70_000
    mover.stop()
