"""The change journal (``storage.changes``): whatever a log does to what a Fetch answer shows
for a partition read to its end (high watermark, last stable offset, log start, log end, the
log open or closed) stamps the log's topic, so that an answer kept for the topic is not sent
again after it (``wireserver.apis.fetch.CaughtUpMemo``)."""

from __future__ import annotations

import shutil

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.storage.cleaner_helpers import keyed_batch
from tests.storage.helpers import FakeClock, make_batch, open_log
from wireserver.storage.changes import ChangeJournal
from wireserver.storage.manager import LogManager

TOPIC = "orders"


def observed(log) -> tuple:
    """What a caught-up partition's answer is made of, and whether the log is open."""
    return log.fetch_offsets(), log.log_end_offset, log.closed


class Operations:
    """Log operations by name, each with its arguments; any may refuse (an offset out of
    range, a marker without its transaction): the journal is checked either way."""

    def __init__(self, log) -> None:
        self.log = log
        self.sequences: dict[int, int] = {}

    def run(self, name: str, argument: int, flag: bool) -> None:
        log = self.log
        if name == "append":
            log.append(make_batch(argument), leader_epoch=0)
        elif name == "begin":  # a transactional batch of producer ``argument``
            sequence = self.sequences.get(argument, 0)
            self.sequences[argument] = sequence + 1
            batch = keyed_batch(
                [(b"k", b"v")],
                producer_id=argument,
                epoch=0,
                sequence=sequence,
                transactional=True,
            )
            log.append(batch, leader_epoch=0)
        elif name == "end":  # producer ``argument``'s commit (flag) or abort marker
            log.append_marker(argument, 0, flag)
        elif name == "high_watermark":
            log.high_watermark = argument
        elif name == "delete_records":
            log.delete_records_before(argument)
        elif name == "truncate_to":
            log.truncate_to(argument)
        elif name == "truncate_fully":
            log.truncate_fully_and_start_at(argument)
        elif name == "as_follower":
            batch = make_batch(argument)
            batch[0:8] = log.log_end_offset.to_bytes(8, "big")
            log.append_as_follower(batch)
        else:
            raise AssertionError(name)


OPERATION = st.tuples(
    st.sampled_from(
        [
            "append",
            "begin",
            "end",
            "high_watermark",
            "delete_records",
            "truncate_to",
            "truncate_fully",
            "as_follower",
        ]
    ),
    st.integers(1, 12),
    st.booleans(),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(operations=st.lists(OPERATION, min_size=1, max_size=20))
def test_every_change_a_fetch_shows_stamps_the_topic(tmp_path_factory, operations):
    directory = tmp_path_factory.mktemp("log") / f"{TOPIC}-0"
    log = open_log(directory)
    log.changes = journal = ChangeJournal()
    steps = Operations(log)
    changed = 0
    for name, argument, flag in operations:
        before, stamp = observed(log), journal.stamps.get(TOPIC, 0)
        try:
            steps.run(name, argument, flag)
        except Exception:  # noqa: BLE001 - refused operations change nothing they show
            pass
        if observed(log) != before:
            changed += 1
            assert journal.stamps[TOPIC] > stamp, (name, argument, before, observed(log))
    log.close()
    shutil.rmtree(directory, ignore_errors=True)


def test_the_operations_change_what_a_fetch_shows(tmp_path):
    """The generated operations reach each field: the property above is not vacuous."""
    log = open_log(tmp_path / f"{TOPIC}-0")
    log.changes = journal = ChangeJournal()
    steps = Operations(log)
    seen = []
    for name, argument, flag in [
        ("append", 3, False),
        ("high_watermark", 2, False),
        ("begin", 1, False),
        ("high_watermark", 12, False),
        ("end", 1, True),
        ("delete_records", 2, False),
        ("truncate_to", 3, False),
        ("truncate_fully", 9, False),
        ("as_follower", 2, False),
    ]:
        before, stamp = observed(log), journal.sequence
        steps.run(name, argument, flag)
        assert observed(log) != before, name
        assert journal.stamps[TOPIC] > stamp, name
        seen.append(name)
    assert len(seen) == 9
    stamp = journal.sequence
    log.close()
    assert log.closed and journal.stamps[TOPIC] > stamp


def test_a_log_made_deleted_or_made_again_stamps_its_topic(tmp_path):
    logs = LogManager([str(tmp_path)], {}, FakeClock())
    logs.load()
    try:
        journal = logs.changes
        logs.create_topic(TOPIC, 1)
        made = journal.stamps[TOPIC]
        logs.drop_partition(TOPIC, 0)
        logs.host_partition(TOPIC, 0)
        again = journal.stamps[TOPIC]
        assert again > made
        logs.delete_topic(TOPIC)
        assert journal.stamps[TOPIC] > again
    finally:
        logs.close()
