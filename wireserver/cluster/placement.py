"""Replica placement: Kafka's ``AdminUtils.assignReplicasToBrokers`` (ZooKeeper era).

Without racks: the first replica of partition ``p`` goes to broker ``(p + start) % n`` of the
sorted broker list; the others follow at a shift that grows by one every ``n`` partitions, so
that followers spread too. With racks (every broker must have one): the brokers are first
interleaved rack by rack, and a replica skips brokers whose rack already holds a replica of the
partition (until every rack has one) and brokers already holding one.
"""

from __future__ import annotations

import random
from collections.abc import Mapping


class PlacementError(ValueError):
    pass


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def assign_rack_unaware(
    partitions: int,
    replication_factor: int,
    brokers: list[int],
    start_index: int = -1,
    first_partition: int = -1,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    brokers = sorted(brokers)
    n = len(brokers)
    rng = rng or random.Random()
    start = start_index if start_index >= 0 else rng.randrange(n)
    shift = start_index if start_index >= 0 else rng.randrange(n)
    current = max(0, first_partition)
    out: dict[int, list[int]] = {}
    for _ in range(partitions):
        if current > 0 and current % n == 0:
            shift += 1
        first = (current + start) % n
        replicas = [brokers[first]]
        for j in range(replication_factor - 1):
            replicas.append(brokers[_replica_index(first, shift, j, n)])
        out[current] = replicas
        current += 1
    return out


def rack_alternated(racks: Mapping[int, str]) -> list[int]:
    """Brokers interleaved by rack: the first of every rack, then the second of every rack..."""
    by_rack: dict[str, list[int]] = {}
    for broker, rack in sorted(racks.items()):
        by_rack.setdefault(rack, []).append(broker)
    iterators = [iter(by_rack[rack]) for rack in sorted(by_rack)]
    out: list[int] = []
    while len(out) < len(racks):
        for it in iterators:
            broker = next(it, None)
            if broker is not None:
                out.append(broker)
    return out


def assign_rack_aware(
    partitions: int,
    replication_factor: int,
    racks: Mapping[int, str],
    start_index: int = -1,
    first_partition: int = -1,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    arranged = rack_alternated(racks)
    n = len(arranged)
    num_racks = len(set(racks.values()))
    rng = rng or random.Random()
    start = start_index if start_index >= 0 else rng.randrange(n)
    shift = start_index if start_index >= 0 else rng.randrange(n)
    current = max(0, first_partition)
    out: dict[int, list[int]] = {}
    for _ in range(partitions):
        if current > 0 and current % n == 0:
            shift += 1
        first = (current + start) % n
        leader = arranged[first]
        replicas = [leader]
        racks_with = {racks[leader]}
        brokers_with = {leader}
        k = 0
        for _ in range(replication_factor - 1):
            while True:
                broker = arranged[_replica_index(first, shift * num_racks, k, n)]
                rack = racks[broker]
                k += 1
                if (rack not in racks_with or len(racks_with) == num_racks) and (
                    broker not in brokers_with or len(brokers_with) == n
                ):
                    replicas.append(broker)
                    racks_with.add(rack)
                    brokers_with.add(broker)
                    break
        out[current] = replicas
        current += 1
    return out


def assign_replicas(
    partitions: int,
    replication_factor: int,
    brokers: Mapping[int, str | None],
    start_index: int = -1,
    first_partition: int = -1,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """``brokers``: live broker id -> rack (or None). Rack-aware when every broker has a rack;
    some with and some without is an error, as in Kafka."""
    if partitions <= 0:
        raise PlacementError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise PlacementError("Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise PlacementError(
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{len(brokers)}."
        )
    with_rack = {b: r for b, r in brokers.items() if r}
    if not with_rack:
        return assign_rack_unaware(
            partitions, replication_factor, list(brokers), start_index, first_partition, rng
        )
    if len(with_rack) != len(brokers):
        raise PlacementError(
            "Not all brokers have rack information for replica rack aware assignment."
        )
    return assign_rack_aware(
        partitions, replication_factor, with_rack, start_index, first_partition, rng
    )
