"""Which topics changed, and when: the broker's journal of changes a Fetch answer can show.

A consumer without fetch sessions (librdkafka) names every partition it follows in every
Fetch, and while it is caught up the answer for nearly all of them is what it was the time
before. Telling that partition by partition costs a few hundred nanoseconds each, which at ten
thousand partitions is most of such a fetch (``wireserver.apis.fetch.CaughtUpMemo``). The
journal lets a whole topic be told unchanged in one lookup instead: every change a caught-up
partition's answer can show stamps its topic with the next number of a broker-wide sequence,
and an answer kept at sequence number ``n`` still holds for a topic whose stamp is at most
``n``.

What stamps a topic: a log made a partition's log (``LogManager``), an append (leader,
marker, follower), a new high watermark or log start, a truncation, a log closed, deleted or
moved, and a partition's leadership applied, taken or given up (``replica.partition``). A
stamp is never removed: a deleted topic's stamp stays, newer than anything kept before it.
Deletions are also counted (``deletions``), so that what is kept of a topic can be dropped
with it.
Stamping a topic too often costs a re-read; missing one would send a stale answer, which is
why every place that changes those fields stamps, and tests/storage/test_changes.py checks the
log's operations against the fields they change.
"""

from __future__ import annotations


class ChangeJournal:
    """topic -> the sequence number of its latest change (see the module's docstring)."""

    __slots__ = ("sequence", "stamps", "deletions")

    def __init__(self) -> None:
        #: the number of the latest change, of any topic
        self.sequence = 0
        #: topic -> the number of its latest change
        self.stamps: dict[str, int] = {}
        #: how many topics were deleted (``deleted``)
        self.deletions = 0

    def stamp(self, topic: str) -> None:
        """Record a change of ``topic`` now."""
        self.sequence += 1
        self.stamps[topic] = self.sequence

    def deleted(self, topic: str) -> None:
        """Record the deletion of ``topic``: a change, and one more deletion."""
        self.deletions += 1
        self.stamp(topic)

    def unchanged_since(self, topic: str, sequence: int) -> bool:
        """Whether ``topic`` has had no change after sequence number ``sequence``."""
        return self.stamps.get(topic, 0) <= sequence
