"""Java's ``HashMap`` and ``HashSet`` iteration order, for code that must make the choices a
Kafka class makes while it walks such collections (the share ``SimpleAssignor`` does: which
member gives up a partition, which partition an unfilled member takes next).

A ``java.util.HashMap`` iterates its table bucket by bucket (bucket = spread hash masked by the
capacity) and, within a bucket, along its chain: ``put`` appends a new node to the chain,
``computeIfAbsent`` puts it at the head; a resize splits a chain keeping its order, a removal
leaves the others as they were. So the order is that of (bucket at the current capacity,
place in the chain), the place being one counter that grows for appends and shrinks for
prepends; the capacity is the other thing to follow exactly: when the table is allocated, when it doubles (``put`` after the insertion
that takes the size over the threshold, ``computeIfAbsent`` before an insertion once the size
is over it, a bucket growing past 8 while the table is under 64). Bins turned into trees (8+
colliding keys in a table of 64 or more) are not modelled: a tree bin orders its nodes by
where they sit in the tree, and the share assignor's maps do not come near (a topic's
partitions hash to consecutive values).

Keys: ``int`` (``Integer``), ``str`` (``String``), ``uuid.UUID`` (Kafka's ``Uuid``) and
``(uuid.UUID, int)`` (Kafka's ``TopicIdPartition`` record), hashed as those classes hash.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_INT_MASK = 0xFFFFFFFF
_LONG_MASK = 0xFFFFFFFFFFFFFFFF
_DEFAULT_CAPACITY = 16
_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64


def _to_int(value: int) -> int:
    """Two's complement 32-bit, as a Java ``int``."""
    value &= _INT_MASK
    return value - (1 << 32) if value & 0x80000000 else value


def java_hash_code(key: object) -> int:
    """``key.hashCode()`` of the Java object the Python value stands for."""
    if isinstance(key, int):
        return _to_int(key)
    if isinstance(key, str):
        units = key.encode("utf-16-be")
        h = 0
        for i in range(0, len(units), 2):
            h = (31 * h + (units[i] << 8 | units[i + 1])) & _INT_MASK
        return _to_int(h)
    if isinstance(key, uuid.UUID):
        # Uuid.hashCode: h = msb ^ lsb; (int) (h >> 32) ^ (int) h
        h = ((key.int >> 64) ^ key.int) & _LONG_MASK
        return _to_int((h >> 32) ^ h)
    if isinstance(key, tuple) and len(key) == 2:
        # a record's hashCode (ObjectMethods): 31 * hash(first) + hash(second)
        return _to_int(31 * java_hash_code(key[0]) + java_hash_code(key[1]))
    raise TypeError(f"no Java hashCode for {key!r}")


def _spread(h: int) -> int:
    """``HashMap.hash``: the high half folded into the low one."""
    u = h & _INT_MASK
    return u ^ (u >> 16)


def table_size_for(capacity: int) -> int:
    """``HashMap.tableSizeFor``: the power of two at least ``capacity`` (1 for 0)."""
    size = 1
    while size < capacity:
        size <<= 1
    return size


class JavaHashMap(Generic[K, V]):
    """``new HashMap<>()`` (``initial_capacity`` None) or ``new HashMap<>(initial_capacity)``:
    the operations the share assignor uses, iterating as Java's would."""

    __slots__ = ("_values", "_sequence", "_spread", "_next", "_capacity", "_threshold")

    def __init__(self, initial_capacity: int | None = None):
        self._values: dict[K, V] = {}
        self._sequence: dict[K, int] = {}
        self._spread: dict[K, int] = {}
        self._next = 0
        self._capacity = 0  # the table is allocated at the first insertion
        self._threshold = 0 if initial_capacity is None else table_size_for(initial_capacity)

    def _resize(self) -> None:
        if self._capacity > 0:
            self._capacity <<= 1
        elif self._threshold > 0:
            self._capacity = self._threshold
        else:
            self._capacity = _DEFAULT_CAPACITY
        self._threshold = int(self._capacity * 0.75)

    def _bucket_size(self, spread: int) -> int:
        mask = self._capacity - 1
        return sum(1 for s in self._spread.values() if s & mask == spread & mask)

    def _insert(self, key: K, value: V, treeify_at: int, at_head: bool) -> None:
        spread = _spread(java_hash_code(key))
        in_bucket = self._bucket_size(spread)
        self._next += 1
        self._values[key] = value
        self._sequence[key] = -self._next if at_head else self._next
        self._spread[key] = spread
        if in_bucket >= treeify_at and self._capacity < _MIN_TREEIFY_CAPACITY:
            self._resize()  # treeifyBin on a small table resizes it instead

    def put(self, key: K, value: V) -> None:
        if self._capacity == 0:
            self._resize()
        if key in self._values:
            self._values[key] = value
            return
        self._insert(key, value, _TREEIFY_THRESHOLD, at_head=False)
        if len(self._values) > self._threshold:
            self._resize()

    def compute_if_absent(self, key: K, factory: Callable[[], V]) -> V:
        if len(self._values) > self._threshold or self._capacity == 0:
            self._resize()
        if key in self._values:
            return self._values[key]
        value = factory()
        self._insert(key, value, _TREEIFY_THRESHOLD - 1, at_head=True)
        return value

    def get(self, key: K) -> V | None:
        return self._values.get(key)

    def remove(self, key: K) -> bool:
        if key not in self._values:
            return False
        del self._values[key]
        del self._sequence[key]
        del self._spread[key]
        return True

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __len__(self) -> int:
        return len(self._values)

    def keys(self) -> list[K]:
        """The keys in Java's iteration order (a snapshot)."""
        mask = self._capacity - 1
        return sorted(self._values, key=lambda k: (self._spread[k] & mask, self._sequence[k]))

    def items(self) -> list[tuple[K, V]]:
        return [(k, self._values[k]) for k in self.keys()]


class JavaHashSet(Generic[K]):
    """``new HashSet<>()``, ``new HashSet<>(initial_capacity)`` or, through
    :meth:`copy_of`, ``new HashSet<>(collection)``."""

    __slots__ = ("_map",)

    def __init__(self, initial_capacity: int | None = None, items: Iterable[K] = ()):
        self._map: JavaHashMap[K, None] = JavaHashMap(initial_capacity)
        for item in items:
            self.add(item)

    @classmethod
    def copy_of(cls, source: JavaHashSet[K]) -> JavaHashSet[K]:
        """``new HashSet<>(source)``: room for the source's size, its items in its order."""
        return cls(max(int(len(source) / 0.75) + 1, 16), source)

    def add(self, item: K) -> bool:
        if item in self._map:
            return False
        self._map.put(item, None)
        return True

    def remove(self, item: K) -> bool:
        return self._map.remove(item)

    def __contains__(self, item: object) -> bool:
        return item in self._map

    def __len__(self) -> int:
        return len(self._map)

    def __iter__(self) -> Iterator[K]:
        """A snapshot of Java's iteration order: enough where, as in the assignor, the set
        changes during a walk only by removing the item the walk is at."""
        return iter(self._map.keys())


def new_hash_map(expected: int) -> JavaHashMap:
    """Kafka's ``AssignorHelpers.newHashMap``: ``new HashMap<>((int) ((n + 1) / 0.75f + 1))``."""
    return JavaHashMap(int((expected + 1) / 0.75 + 1))


def new_hash_set(expected: int) -> JavaHashSet:
    """Kafka's ``AssignorHelpers.newHashSet``."""
    return JavaHashSet(int((expected + 1) / 0.75 + 1))
