"""Fetch session (KIP-227) scenarios, registered with ``compat_tests.scenarios.scenario`` like
the others.

``fetch-session-rules`` speaks the protocol itself, with kafka-python's FetchRequest classes
over :class:`wireserver.testing.KafkaWire`, and records what each step of a client's session
is answered: the error, which session the answer names (normalized to ``s1``, ``s2``... in
order of appearance, 0 for none) and the partitions listed. The steps cover when a session's
epoch is checked and advanced (on arrival, so a request accepted while an earlier one of the
session still long-polls makes that earlier one fail), that a refused request leaves the epoch
alone, that sessions outlive connections, FETCH_SESSION_ID_NOT_FOUND after a session is closed
(full fetch with epoch 0 or -1, or an incremental fetch forgetting every partition),
FETCH_SESSION_TOPIC_ID_ERROR when a session opened with topic ids (v13+) is continued with
names or the other way round, and the rotation that sends a partition that returned records to
the back of the session.

:func:`session_rules` is also run on its own by tests/integration/test_fetch_sessions.py.
"""

from __future__ import annotations

import time
from typing import Any

from kafka.errors import for_code
from kafka.protocol.consumer.fetch import FetchRequest

from compat_tests import neutral
from compat_tests.clients import Client, record
from compat_tests.raw_protocol import topic_ids
from compat_tests.scenarios import scenario
from wireserver.testing import KafkaWire

NAMES, IDS = 12, 13  # Fetch versions naming topics by name / by id


class SessionClient:
    """Fetch requests of one topic's partitions 0 and 1, each on a fresh connection unless a
    wire is given (sessions belong to the broker, not to a connection)."""

    def __init__(self, bootstrap: str, topic: str, topic_id: Any):
        self.bootstrap, self.topic, self.topic_id = bootstrap, topic, topic_id
        self.labels: dict[int, str] = {}

    def request(
        self,
        session_id: int,
        epoch: int,
        *,
        version: int = NAMES,
        partitions: dict[int, int] | None = None,
        forget: tuple[int, ...] = (),
        max_wait_ms: int = 0,
        min_bytes: int = 0,
        max_bytes: int = 1 << 20,
    ):
        """``partitions``: partition -> fetch offset, to send (added or changed)."""
        ft = FetchRequest.FetchTopic
        ident = {"topic_id": self.topic_id} if version >= IDS else {"topic": self.topic}
        topics = (
            [
                ft(
                    **ident,
                    partitions=[
                        ft.FetchPartition(
                            partition=p,
                            current_leader_epoch=-1,
                            fetch_offset=offset,
                            last_fetched_epoch=-1,
                            log_start_offset=-1,
                            partition_max_bytes=1 << 20,
                        )
                        for p, offset in partitions.items()
                    ],
                )
            ]
            if partitions
            else []
        )
        forgotten = (
            [FetchRequest.ForgottenTopic(**ident, partitions=list(forget))] if forget else []
        )
        return FetchRequest(
            version=version,
            replica_id=-1,
            max_wait_ms=max_wait_ms,
            min_bytes=min_bytes,
            max_bytes=max_bytes,
            isolation_level=0,
            session_id=session_id,
            session_epoch=epoch,
            topics=topics,
            forgotten_topics_data=forgotten,
            rack_id="",
        )

    def fetch(self, session_id: int, epoch: int, **kwargs) -> tuple[int, dict]:
        """(the answer's session id, what the answer shows)."""
        with KafkaWire(self.bootstrap, client_id="compat-fetch-session") as wire:
            return self.observe(wire.request(self.request(session_id, epoch, **kwargs)))

    def observe(self, response) -> tuple[int, dict]:
        sid = response.session_id
        label = self.labels.setdefault(sid, f"s{len(self.labels) + 1}") if sid else 0
        partitions = sorted(
            [p.partition_index, for_code(p.error_code).message, "records" if p.records else "empty"]
            for t in response.responses
            for p in t.partitions
        )
        return sid, {
            "error": for_code(response.error_code).message,
            "session": label,
            "partitions": partitions,
        }


def session_rules(bootstrap: str) -> dict:
    """The steps of the module docstring; {step: what the answer shows}."""
    topic = neutral.create_topic(bootstrap, "fetch-session", partitions=2)
    neutral.write(bootstrap, topic, [record(f"v{i}", partition=i % 2) for i in range(4)])
    topic_id = topic_ids(bootstrap, topic)[1][topic]
    client = SessionClient(bootstrap, topic, topic_id)
    at_end = {0: 2, 1: 2}  # nothing to read: a long poll waits
    obs: dict[str, Any] = {}

    s1, obs["open"] = client.fetch(0, 0, partitions=at_end)
    _, obs["incremental-1"] = client.fetch(s1, 1)
    _, obs["repeat-epoch-1"] = client.fetch(s1, 1)
    _, obs["epoch-2-after-refusal"] = client.fetch(s1, 2)
    _, obs["epoch-too-high"] = client.fetch(s1, 9)
    _, obs["unknown-session"] = client.fetch(1 if s1 != 1 else 2, 1)

    # Epoch 3 long-polls on one connection; epoch 4 on another is accepted meanwhile.
    waiting = KafkaWire(bootstrap, client_id="compat-fetch-session")
    try:
        slow = client.request(s1, 3, max_wait_ms=3000, min_bytes=1 << 20)
        waiting.send(slow)
        time.sleep(0.5)
        _, obs["epoch-4-while-3-waits"] = client.fetch(s1, 4)
        obs["epoch-3-when-it-returns"] = client.observe(waiting.read_response(slow))[1]
    finally:
        waiting.close()
    _, obs["epoch-5"] = client.fetch(s1, 5)
    _, obs["epoch-6-with-topic-ids"] = client.fetch(s1, 6, version=IDS)
    _, obs["epoch-6-with-names"] = client.fetch(s1, 6)

    s2, obs["reopen"] = client.fetch(s1, 0, partitions=at_end)
    _, obs["old-session-after-reopen"] = client.fetch(s1, 7)
    _, obs["forget-all"] = client.fetch(s2, 1, forget=(0, 1))
    _, obs["after-forget-all"] = client.fetch(s2, 2)

    s3, obs["open-3"] = client.fetch(0, 0, partitions=at_end)
    _, obs["close"] = client.fetch(s3, -1, partitions=at_end)
    _, obs["after-close"] = client.fetch(s3, 1)

    s4, obs["open-with-topic-ids"] = client.fetch(0, 0, version=IDS, partitions=at_end)
    _, obs["continue-with-names"] = client.fetch(s4, 1)
    _, obs["continue-with-topic-ids"] = client.fetch(s4, 1, version=IDS)

    # max_bytes=1: each answer carries one batch, of the first partition of the session that
    # has one; a partition that sent records moves to the back.
    s5, obs["rotation-open"] = client.fetch(0, 0, partitions={0: 0, 1: 0}, max_bytes=1)
    for epoch in (1, 2, 3):
        _, obs[f"rotation-{epoch}"] = client.fetch(s5, epoch, max_bytes=1)
    return obs


def _check_rules(obs: dict) -> None:
    assert obs["open"]["session"] == "s1", obs
    assert obs["repeat-epoch-1"]["error"] == "INVALID_FETCH_SESSION_EPOCH", obs
    assert obs["epoch-2-after-refusal"]["error"] == "NO_ERROR", obs


@scenario("fetch-session-rules", clients=("kafka-python",), check=_check_rules)
def fetch_session_rules(bootstrap: str, client: Client) -> dict:
    """a fetch session driven step by step with kafka-python's Fetch v12/v13 classes: epochs,
    refusals, a long poll overtaken, reconnects, closing, topic ids, partition rotation"""
    return session_rules(bootstrap)
