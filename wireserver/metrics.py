"""The counters and timings a broker keeps as it serves, read by ``wireserver.ops.prometheus``.

They are Kafka's own meters (``BrokerTopicMetrics``, ``RequestMetrics``, the replica manager's
ISR rates, the socket server's authentication counts), kept as plain integers and bucket
counts: recording one is a dict lookup and an addition on the reactor thread, with no lock and
no call into the exposition library, so that produce and fetch pay next to nothing for them.
Everything derived from state (partition counts, offsets, sizes, lag) is read at scrape time
instead of being kept up to date here.

Durations are measured with ``time.perf_counter``: they are readings for operators, never
inputs to the broker's logic, so they do not come from the injected reactor clock.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Mapping
from operator import attrgetter
from typing import Any

from wireserver.protocol.errors import ErrorCode
from wireserver.protocol.metadata_response import PartitionEntries
from wireserver.protocol.produce_response import ProduceAnswer

#: Kafka's RequestMetrics histograms, by the MBean name the JMX exporter lower-cases.
REQUEST_TIMES = (
    "TotalTimeMs",
    "RequestQueueTimeMs",
    "LocalTimeMs",
    "RemoteTimeMs",
    "ResponseQueueTimeMs",
    "ResponseSendTimeMs",
)


def request_times_ms(
    received: float,
    started: float,
    returned: float,
    completed: float,
    dequeued: float,
    written: float,
) -> tuple[float, float, float, float, float, float]:
    """One request's ``REQUEST_TIMES`` in milliseconds, in that order, from
    ``time.perf_counter()`` readings: the read that brought its frame, the handler's start and
    return, its response ready, its turn to be written, and written (Kafka's
    ``RequestChannel.updateRequestMetrics``). The metrics and the request log both use it."""
    return (
        (written - received) * 1000.0,
        (started - received) * 1000.0,
        (returned - started) * 1000.0,
        max(0.0, completed - returned) * 1000.0,
        max(0.0, dequeued - completed) * 1000.0,
        (written - dequeued) * 1000.0,
    )


#: The percentiles a Yammer histogram MBean exposes (``50thPercentile`` ... ``999thPercentile``),
#: as the JMX exporter's ``quantile`` label writes them.
QUANTILES = (
    ("0.50", 0.50),
    ("0.75", 0.75),
    ("0.95", 0.95),
    ("0.98", 0.98),
    ("0.99", 0.99),
    ("0.999", 0.999),
)
#: Bucket upper bounds in milliseconds: 1.25x apart from 10 µs to about 2.5 minutes, so a
#: quantile read from them is within 25 % of the true value.
BOUNDS_MS: tuple[float, ...] = tuple(0.01 * 1.25**i for i in range(75))
#: How long a histogram's quantiles look back: Kafka's histograms decay exponentially over
#: about five minutes; ours keep the current and the previous window.
WINDOW_S = 150.0


class RequestTimes:
    """Kafka's six RequestMetrics histograms of one request type (``REQUEST_TIMES``, in that
    order): counts of durations in fixed buckets, for quantiles over the last one or two
    windows, and how many requests were measured since start (the MBeans' ``Count``). The six
    share one window, so recording a request is one window check and six bucket increments."""

    __slots__ = ("count", "current", "previous", "window_start")

    def __init__(self) -> None:
        self.count = 0
        self.current = [[0] * (len(BOUNDS_MS) + 1) for _ in REQUEST_TIMES]
        self.previous: list[list[int]] = []
        self.window_start = 0.0

    def record(self, now: float, values: tuple[float, ...]) -> None:
        """One request's six durations (ms), ``now`` a ``time.perf_counter()`` reading."""
        if now - self.window_start >= WINDOW_S:
            self.previous = self.current if now - self.window_start < 2 * WINDOW_S else []
            self.current = [[0] * (len(BOUNDS_MS) + 1) for _ in REQUEST_TIMES]
            self.window_start = now
        bounds = BOUNDS_MS
        for counts, value in zip(self.current, values):
            counts[bisect_left(bounds, value)] += 1
        self.count += 1

    def quantiles(self, which: int) -> list[tuple[str, float]]:
        """Each of ``QUANTILES`` of histogram ``which`` (an index into ``REQUEST_TIMES``) as
        the upper bound of the bucket it falls in (0 when empty)."""
        counts = list(self.current[which])
        if self.previous:
            for index, value in enumerate(self.previous[which]):
                counts[index] += value
        total = sum(counts)
        found = []
        for label, q in QUANTILES:
            if not total:
                found.append((label, 0.0))
                continue
            rank = q * total
            seen = 0
            index = 0
            while index < len(counts) - 1 and (seen + counts[index] < rank or not counts[index]):
                seen += counts[index]
                index += 1
            found.append((label, BOUNDS_MS[min(index, len(BOUNDS_MS) - 1)]))
        return found


class TopicMeters:
    """``BrokerTopicMetrics`` of one topic (or, under the name ``""``, of all topics)."""

    __slots__ = (
        "messages_in",
        "bytes_in",
        "bytes_out",
        "bytes_rejected",
        "produce_requests",
        "fetch_requests",
        "failed_produce_requests",
        "failed_fetch_requests",
    )

    def __init__(self) -> None:
        self.messages_in = 0
        self.bytes_in = 0
        self.bytes_out = 0
        self.bytes_rejected = 0
        self.produce_requests = 0
        self.fetch_requests = 0
        self.failed_produce_requests = 0
        self.failed_fetch_requests = 0


class BrokerMetrics:
    """One broker's meters. ``topic(name)`` gives a topic's; the broker-wide totals Kafka keeps
    in the same MBeans without a topic are summed at scrape time."""

    def __init__(self, enabled: bool = True) -> None:
        #: ``metrics.enable``: when False nothing per request is counted or timed (the
        #: state-derived figures are still served)
        self.enabled = enabled
        self.topics: dict[str, TopicMeters] = {}
        #: (request name, version) -> requests received (``RequestsPerSec``)
        self.requests: defaultdict[tuple[str, int], int] = defaultdict(int)
        #: (request name, error name) -> responses carrying that code (``ErrorsPerSec``)
        self.errors: defaultdict[tuple[str, str], int] = defaultdict(int)
        #: request name -> its six RequestMetrics histograms
        self.times: dict[str, RequestTimes] = {}
        #: listener name -> failed SASL authentications
        self.failed_authentications: defaultdict[str, int] = defaultdict(int)
        #: listener name -> connections accepted since start
        self.connections_created: defaultdict[str, int] = defaultdict(int)

    def topic(self, name: str) -> TopicMeters:
        meters = self.topics.get(name)
        if meters is None:
            meters = self.topics[name] = TopicMeters()
        return meters

    def forget_topic(self, name: str) -> None:
        """A deleted topic's meters go (Kafka removes its MBeans)."""
        self.topics.pop(name, None)

    def request_times(self, request: str, now: float, values: tuple[float, ...]) -> None:
        """One request's ``RequestMetrics`` timings, in milliseconds, in ``REQUEST_TIMES``
        order (total, request queue, local, remote, response queue, send)."""
        times = self.times.get(request)
        if times is None:
            times = self.times[request] = RequestTimes()
        times.record(now, values)


#: struct id -> (has an ``error_code`` field, names of the struct fields that hold one below)
_ERROR_PLANS: dict[int, tuple[bool, tuple[str, ...]]] = {}
#: error code -> Kafka's name of it, as ``ErrorsPerSec``'s ``error`` label writes it
_ERROR_NAMES: dict[int, str] = {code.value: code.name for code in ErrorCode}
#: an entry's code, read in C over a wide answer's thousands of partitions
_ERROR_CODE = attrgetter("error_code")


def _error_plan(struct: Any) -> tuple[bool, tuple[str, ...]]:
    plan = _ERROR_PLANS.get(id(struct))
    if plan is None:
        nested = []
        for field in struct._fields:
            if (field.is_struct() or field.is_struct_array()) and any(_error_plan(field)):
                nested.append(field.name)
        has_code = "error_code" in struct.fields
        plan = _ERROR_PLANS[id(struct)] = (has_code, tuple(nested))
    return plan


def count_errors(response: Any, request: str, counts: defaultdict[tuple[str, str], int]) -> None:
    """Add the error codes a response carries to ``counts[(request, error name)]``, one per
    ``error_code`` field at any depth (Kafka's ``AbstractResponse.errorCounts``, NONE
    included), through a plan per message structure made once."""
    if type(response) is ProduceAnswer:
        # One per Produce request: its codes are its partitions' (no other level of the
        # answer has one), counted without the plan's walk (about 2 % of such a request).
        for topic in response.responses:
            for partition in topic.partition_responses:
                name = _ERROR_NAMES.get(partition.error_code, "UNKNOWN_SERVER_ERROR")
                counts[(request, name)] += 1
        return
    struct = getattr(response, "_struct", None)
    if struct is None:
        return
    has_code, nested = _error_plan(struct)
    if has_code:
        counts[(request, _ERROR_NAMES.get(response.error_code, "UNKNOWN_SERVER_ERROR"))] += 1
    for name in nested:
        value = getattr(response, name)
        if value is None:
            continue
        if isinstance(value, list):
            if not value:
                continue
            item_struct = getattr(value[0], "_struct", None)
            if item_struct is not None and _error_plan(item_struct) == (True, ()):
                # Leaves (a Metadata answer's thousands of partitions): count the codes
                # without a call per entry.
                codes: Mapping[int, int]
                if isinstance(value, PartitionEntries):
                    codes = value.error_codes()
                elif len(value) == 1:  # a Produce or Fetch of one partition: no Counter
                    codes = {value[0].error_code: 1}
                else:
                    codes = Counter(map(_ERROR_CODE, value))
                for code, seen in codes.items():
                    counts[(request, _ERROR_NAMES.get(code, "UNKNOWN_SERVER_ERROR"))] += seen
                continue
            for item in value:
                count_errors(item, request, counts)
        else:
            count_errors(value, request, counts)
