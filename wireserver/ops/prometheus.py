"""``/metrics``: the broker's state and meters in Prometheus' text format, under the names the
Prometheus JMX exporter's widely used Kafka rules give Kafka's MBeans, so that dashboards built
for Kafka work unchanged (``tests/ops/test_prometheus.py`` checks every name the Strimzi
project's Kafka and Kafka-exporter Grafana dashboards query).

The rules lower-case ``kafka.<domain><type=T, name=N, k=v...>`` to ``kafka_<domain>_<t>_<n>``
with the ``k=v`` pairs as labels: ``...PerSec`` meters become counters ending in ``_total``,
gauges keep the name, ``...Percent`` gauges end in ``_percent``, histograms become a ``_count``
plus one gauge per percentile with a ``quantile`` label, and the socket server's
``listener``/``networkProcessor`` attributes become ``kafka_server_socket_server_metrics_*``.

Topic, partition and consumer-group figures are named as the widely used Kafka exporter
(``kafka_topic_partition_current_offset``, ``kafka_consumergroup_lag`` ...). That exporter asks
the whole cluster from one place; here every broker answers for its share so that a sum over
brokers counts each thing once: a partition's figures come from its leader, a group's from
its coordinator, the cluster's (brokers, topics) from the active controller.

Process figures come from prometheus-client's process collector (``process_open_fds`` ...);
the few JVM names Kafka dashboards chart (memory, threads, collections) are given the Python
process's equivalents, said in docs/operations.md.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.process_collector import ProcessCollector

from wireserver.metrics import QUANTILES, REQUEST_TIMES
from wireserver.ops import status

if TYPE_CHECKING:
    from twisted.internet.defer import Deferred

    from wireserver.ops.host import OpsHost

CONTENT_TYPE = CONTENT_TYPE_LATEST

#: The purgatory's key kinds, as Kafka names its purgatories (``delayedOperation`` label).
PURGATORIES = {"append": "Fetch", "hw": "Produce", "low_watermark": "DeleteRecords"}
#: Kafka's BrokerTopicMetrics meters: (MBean name lower-cased, ``TopicMeters`` field).
TOPIC_METERS = (
    ("messagesin", "messages_in"),
    ("bytesin", "bytes_in"),
    ("bytesout", "bytes_out"),
    ("bytesrejected", "bytes_rejected"),
    ("totalproducerequests", "produce_requests"),
    ("totalfetchrequests", "fetch_requests"),
    ("failedproducerequests", "failed_produce_requests"),
    ("failedfetchrequests", "failed_fetch_requests"),
)
#: Kafka's BrokerState value of a running broker (``kafka_server_kafkaserver_brokerstate``).
RUNNING = 3


class PrometheusExposition:
    """One broker's ``/metrics``: a registry holding the collectors that read ``host`` at each
    scrape. Collecting reads the broker's state and runs on the reactor thread, so what it
    reads is consistent; turning the collected families into text is most of a scrape's cost
    and touches nothing of the broker, so ``render_in_thread`` does it on the reactor's thread
    pool and a scrape stalls the Kafka listeners for the collection only."""

    def __init__(self, host: OpsHost):
        self.host = host
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(BrokerCollector(host))
        self.registry.register(ProcessCollector(registry=None))
        self.registry.register(RUNTIME)

    def collect(self) -> list[Metric]:
        """Every family of one scrape (on the reactor thread)."""
        return list(self.registry.collect())

    def render(self) -> bytes:
        """The text of one scrape, all on the calling thread."""
        return format_families(self.collect())

    def render_in_thread(self, reactor: Any) -> Deferred:
        """The text of one scrape: collected now, formatted on ``reactor``'s thread pool."""
        from twisted.internet.threads import deferToThreadPool

        families = self.collect()
        return deferToThreadPool(reactor, reactor.getThreadPool(), format_families, families)


class _Collected:
    """Families collected already, for ``generate_latest`` (which asks a registry for them)."""

    def __init__(self, families: list[Metric]):
        self.families = families

    def collect(self) -> list[Metric]:
        return self.families


def format_families(families: list[Metric]) -> bytes:
    """Prometheus' text format of ``families``; safe on any thread."""
    return generate_latest(_Collected(families))  # type: ignore[arg-type]


def _untyped(name: str, documentation: str, labels: list[str]) -> Metric:
    """A family printed under exactly ``name`` (a counter family would append ``_total``):
    the JMX exporter's ``..._count`` of a histogram."""
    metric = Metric(name, documentation, "unknown")
    metric._labelnames = tuple(labels)  # type: ignore[attr-defined]
    return metric


class BrokerCollector:
    """Kafka's broker MBeans and the Kafka exporter's figures, read from ``host``."""

    def __init__(self, host: OpsHost):
        self.host = host

    def collect(self) -> Iterator[Metric]:
        host = self.host
        if not getattr(host, "started", True) or getattr(host, "replicas", None) is None:
            return
        yield from self._topic_meters()
        yield from self._requests()
        # One walk of the hosted partitions serves both the ReplicaManager counts and the
        # per-partition families (a scrape runs on the reactor: O(partitions) once, not twice).
        states = self._partition_states()
        yield from self._replica_manager(states)
        yield from self._partitions_and_logs(states)
        yield from self._controller()
        yield from self._network()
        yield from self._purgatory()
        yield from self._groups()

    # -- BrokerTopicMetrics -----------------------------------------------------------------

    def _topic_meters(self) -> Iterator[Metric]:
        topics = self.host.metrics.topics
        for mbean, field in TOPIC_METERS:
            family = CounterMetricFamily(
                f"kafka_server_brokertopicmetrics_{mbean}",
                f"Kafka's BrokerTopicMetrics {mbean} (per topic, and all topics without a label)",
                labels=["topic"],
            )
            total = 0
            for name, meters in sorted(topics.items()):
                value = getattr(meters, field)
                total += value
                family.add_metric([name], value)
            # The all-topics MBean has no topic key: a second family would clash, so it is
            # the same name with an empty topic, which the dashboards exclude (topic!="").
            family.add_metric([""], total)
            yield family

    # -- RequestMetrics -----------------------------------------------------------------------

    def _requests(self) -> Iterator[Metric]:
        metrics = self.host.metrics
        requests = CounterMetricFamily(
            "kafka_network_requestmetrics_requests",
            "Requests answered, per request type and version",
            labels=["request", "version"],
        )
        for (name, version), count in sorted(metrics.requests.items()):
            requests.add_metric([name, str(version)], count)
        yield requests
        errors = CounterMetricFamily(
            "kafka_network_requestmetrics_errors",
            "Error codes in responses, per request type (NONE included)",
            labels=["request", "error"],
        )
        for (name, error), count in sorted(metrics.errors.items()):
            errors.add_metric([name, error], count)
        yield errors
        for which, histogram_name in enumerate(REQUEST_TIMES):
            lowered = histogram_name.lower()
            quantiles = GaugeMetricFamily(
                f"kafka_network_requestmetrics_{lowered}",
                f"{histogram_name} percentiles over the last few minutes, per request type",
                labels=["request", "quantile"],
            )
            counts = _untyped(
                f"kafka_network_requestmetrics_{lowered}_count",
                f"{histogram_name}: requests measured since start",
                ["request"],
            )
            for request, times in sorted(metrics.times.items()):
                for label, value in times.quantiles(which):
                    quantiles.add_metric([request, label], value)
                counts.add_sample(counts.name, {"request": request}, times.count)
            yield quantiles
            yield counts

    # -- ReplicaManager and partitions ----------------------------------------------------------

    def _partition_states(self) -> list[tuple[str, int, Any, Any]]:
        """(topic, index, PartitionView, Partition or None) of every partition this broker
        hosts a replica of."""
        host = self.host
        found = []
        for (topic, index), _log in host.logs.logs():
            view = host.metadata.partition_view(topic, index)
            if view is None:
                continue
            found.append((topic, index, view, host.replicas.partitions.get((topic, index))))
        return found

    def _min_isr(self, topic: str) -> int:
        info = self.host.logs.topics.get(topic)
        return info.config.min_insync_replicas if info is not None else 1

    def _replica_manager(self, states: list[tuple[str, int, Any, Any]]) -> Iterator[Metric]:
        host = self.host
        leading = [s for s in states if s[2].leader == host.node_id]
        under = [s for s in leading if len(s[2].isr) < len(s[2].replicas)]
        under_min = [s for s in leading if len(s[2].isr) < self._min_isr(s[0])]
        at_min = [s for s in leading if len(s[2].isr) == self._min_isr(s[0])]
        offline = [s for s in states if s[3] is not None and s[3].offline]
        cluster = host.cluster
        for name, value, doc in (
            ("partitioncount", len(states), "Partitions with a replica on this broker"),
            ("leadercount", len(leading), "Partitions this broker leads"),
            ("underreplicatedpartitions", len(under), "Led partitions with ISR < replicas"),
            ("underminisrpartitioncount", len(under_min), "Led partitions with ISR < min ISR"),
            ("atminisrpartitioncount", len(at_min), "Led partitions with ISR = min ISR"),
            ("offlinereplicacount", len(offline), "Replicas in failed log dirs"),
        ):
            yield GaugeMetricFamily(f"kafka_server_replicamanager_{name}", doc, value=value)
        for name, value in (
            ("isrshrinks", getattr(cluster, "isr_shrinks", 0)),
            ("isrexpands", getattr(cluster, "isr_expands", 0)),
        ):
            yield CounterMetricFamily(
                f"kafka_server_replicamanager_{name}", f"ISR {name[3:]} by this leader", value=value
            )
        yield GaugeMetricFamily(
            "kafka_server_kafkaserver_brokerstate", "Kafka's BrokerState (3: running)", RUNNING
        )

    def _partitions_and_logs(self, states: list[tuple[str, int, Any, Any]]) -> Iterator[Metric]:
        host = self.host
        labels = ["topic", "partition"]

        def family(name: str, doc: str) -> GaugeMetricFamily:
            return GaugeMetricFamily(name, doc, labels=labels)

        cluster_partition = {
            name: family(f"kafka_cluster_partition_{name}", doc)
            for name, doc in (
                ("underreplicated", "1 when the ISR is smaller than the replicas (on the leader)"),
                ("underminisr", "1 when the ISR is below min.insync.replicas (on the leader)"),
                ("atminisr", "1 when the ISR is at min.insync.replicas (on the leader)"),
                ("replicascount", "Replicas of the partition (on the leader)"),
                ("insyncreplicascount", "In-sync replicas of the partition (on the leader)"),
                ("laststableoffsetlag", "High watermark - last stable offset (on the leader)"),
            )
        }
        log_families = {
            name: family(f"kafka_log_log_{name}", doc)
            for name, doc in (
                ("size", "Bytes in the partition's segments on this broker"),
                ("logendoffset", "The replica's log end offset"),
                ("logstartoffset", "The replica's log start offset"),
                ("numlogsegments", "Segments of the replica"),
            )
        }
        exporter = {
            name: family(f"kafka_topic_partition_{name}", doc)
            for name, doc in (
                ("current_offset", "High watermark (the newest offset a consumer can read)"),
                ("oldest_offset", "Log start offset"),
                ("in_sync_replica", "Replicas in the ISR"),
                ("replicas", "Replicas"),
                ("leader", "Leader broker id"),
                ("leader_is_preferred", "1 when the leader is the first replica"),
                ("under_replicated_partition", "1 when the ISR is smaller than the replicas"),
            )
        }
        for topic, index, view, _partition in states:
            key = [topic, str(index)]
            plog = host.logs.get_log(topic, index)
            if plog is None:
                continue
            log_families["size"].add_metric(key, plog.size_bytes)
            log_families["logendoffset"].add_metric(key, plog.log_end_offset)
            log_families["logstartoffset"].add_metric(key, plog.log_start_offset)
            log_families["numlogsegments"].add_metric(key, len(plog.segments))
            if view.leader != host.node_id:
                continue
            min_isr = self._min_isr(topic)
            isr, replicas = len(view.isr), len(view.replicas)
            for name, value in (
                ("underreplicated", int(isr < replicas)),
                ("underminisr", int(isr < min_isr)),
                ("atminisr", int(isr == min_isr)),
                ("replicascount", replicas),
                ("insyncreplicascount", isr),
                ("laststableoffsetlag", plog.high_watermark - plog.last_stable_offset),
            ):
                cluster_partition[name].add_metric(key, value)
            for name, value in (
                ("current_offset", plog.high_watermark),
                ("oldest_offset", plog.log_start_offset),
                ("in_sync_replica", isr),
                ("replicas", replicas),
                ("leader", view.leader),
                (
                    "leader_is_preferred",
                    int(bool(view.replicas) and view.replicas[0] == view.leader),
                ),
                ("under_replicated_partition", int(isr < replicas)),
            ):
                exporter[name].add_metric(key, value)
        yield from cluster_partition.values()
        yield from log_families.values()
        yield from exporter.values()

    # -- the controller ---------------------------------------------------------------------------

    def _controller(self) -> Iterator[Metric]:
        host = self.host
        metadata = host.metadata
        active = metadata.controller_id() == host.node_id
        cluster = host.cluster
        yield GaugeMetricFamily(
            "kafka_controller_kafkacontroller_activecontrollercount",
            "1 on the active controller",
            value=int(active),
        )
        offline = global_partitions = 0
        topics = GaugeMetricFamily(
            "kafka_topic_partitions", "Partitions per topic (from the controller)", labels=["topic"]
        )
        brokers = metadata.live_broker_ids()
        info = GaugeMetricFamily(
            "kafka_broker_info", "Live brokers (from the controller)", labels=["id", "address"]
        )
        topic_count = len(host.logs.topics) if cluster is None else len(cluster.topics)
        if active:
            for name, topic_info in sorted(host.logs.topics.items()) if cluster is None else ():
                topics.add_metric([name], topic_info.num_partitions)
            if cluster is not None:
                for name, assignment in sorted(cluster.topics.items()):
                    topics.add_metric([name], len(assignment.replicas))
                states = cluster.states
                global_partitions = len(states)
                offline = sum(1 for state in states.values() if state.leader not in brokers)
            else:
                global_partitions = len(metadata.all_partitions())
            for endpoint in metadata.broker_endpoints(host.bound[0].name if host.bound else ""):
                info.add_metric([str(endpoint.node_id), f"{endpoint.host}:{endpoint.port}"], 1)
        yield topics
        yield info
        for name, value, doc in (
            ("offlinepartitionscount", offline, "Partitions without a live leader"),
            ("globalpartitioncount", global_partitions, "Partitions in the cluster"),
            ("globaltopiccount", topic_count if active else 0, "Topics in the cluster"),
            ("activebrokercount", len(brokers) if active else 0, "Live brokers"),
        ):
            yield GaugeMetricFamily(f"kafka_controller_kafkacontroller_{name}", doc, value=value)
        yield GaugeMetricFamily(
            "kafka_brokers",
            "Live brokers (from the controller)",
            value=len(brokers) if active else 0,
        )
        yield CounterMetricFamily(
            "kafka_controller_controllerstats_uncleanleaderelections",
            "Unclean leader elections this broker decided as controller",
            value=getattr(cluster, "unclean_leader_elections", 0),
        )

    # -- the socket server ---------------------------------------------------------------------

    def _network(self) -> Iterator[Metric]:
        host = self.host
        labels = ["listener", "networkProcessor"]
        connections = GaugeMetricFamily(
            "kafka_server_socket_server_metrics_connection_count", "Open connections", labels=labels
        )
        created = CounterMetricFamily(
            "kafka_server_socket_server_metrics_connection_creation",
            "Connections accepted since start",
            labels=labels,
        )
        failed = CounterMetricFamily(
            "kafka_server_socket_server_metrics_failed_authentication",
            "Failed SASL authentications since start",
            labels=labels,
        )
        open_by_listener: dict[str, int] = {}
        in_flight = 0
        for connection in list(host.connections):
            name = connection.listener_name
            open_by_listener[name] = open_by_listener.get(name, 0) + 1
            in_flight += sum(1 for slot in connection.pending if not slot.done)
        metrics = host.metrics
        for listener in host.config.listeners:
            name = listener.name
            connections.add_metric([name, "0"], open_by_listener.get(name, 0))
            created.add_metric([name, "0"], metrics.connections_created.get(name, 0))
            failed.add_metric([name, "0"], metrics.failed_authentications.get(name, 0))
        yield connections
        yield created
        yield failed
        yield GaugeMetricFamily(
            "kafka_network_requestchannel_requestqueuesize",
            "Requests received and not yet answered",
            value=in_flight,
        )
        idle = _reactor_idle()
        yield GaugeMetricFamily(
            "kafka_network_socketserver_networkprocessoravgidle_percent",
            "Fraction of time the reactor thread (network and handlers alike) was idle",
            value=idle,
        )
        yield GaugeMetricFamily(
            "kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent",
            "Fraction of time the reactor thread (network and handlers alike) was idle",
            value=idle,
        )
        read, written = _disk_bytes()
        yield GaugeMetricFamily(
            "kafka_server_kafkaserver_linux_disk_read_bytes", "Bytes read from disk", value=read
        )
        yield GaugeMetricFamily(
            "kafka_server_kafkaserver_linux_disk_write_bytes",
            "Bytes written to disk",
            value=written,
        )

    def _purgatory(self) -> Iterator[Metric]:
        sizes = self.host.purgatory.sizes()
        labels = ["delayedOperation"]
        size = GaugeMetricFamily(
            "kafka_server_delayedoperationpurgatory_purgatorysize",
            "Requests waiting in each purgatory",
            labels=labels,
        )
        delayed = GaugeMetricFamily(
            "kafka_server_delayedoperationpurgatory_numdelayedoperations",
            "Requests waiting in each purgatory",
            labels=labels,
        )
        for kind, name in PURGATORIES.items():
            size.add_metric([name], sizes.get(kind, 0))
            delayed.add_metric([name], sizes.get(kind, 0))
        yield size
        yield delayed

    # -- consumer groups --------------------------------------------------------------------

    def _groups(self) -> Iterator[Metric]:
        host = self.host
        labels = ["consumergroup", "topic", "partition"]
        current = GaugeMetricFamily(
            "kafka_consumergroup_current_offset", "Committed offset", labels=labels
        )
        lag = GaugeMetricFamily(
            "kafka_consumergroup_lag", "High watermark - committed offset", labels=labels
        )
        lag_sum = GaugeMetricFamily(
            "kafka_consumergroup_lag_sum", "Lag over a topic's partitions", labels=labels[:2]
        )
        members = GaugeMetricFamily(
            "kafka_consumergroup_members", "Members of the group", labels=labels[:1]
        )
        for _kind, group in status.all_groups(host):
            members.add_metric([group.group_id], len(group.members))
        sums: dict[tuple[str, str], int] = {}
        for offsets in status.group_offsets(host):
            key = [offsets.group_id, offsets.topic, str(offsets.partition)]
            current.add_metric(key, offsets.committed_offset)
            if offsets.lag is None:
                continue  # no replica here: the lag is the partition leader's to know
            lag.add_metric(key, offsets.lag)
            by_topic = (offsets.group_id, offsets.topic)
            sums[by_topic] = sums.get(by_topic, 0) + offsets.lag
        for (group_id, topic), summed in sorted(sums.items()):
            lag_sum.add_metric([group_id, topic], summed)
        yield current
        yield lag
        yield lag_sum
        yield members


_idle_lock = threading.Lock()
_idle_last: list[float] = []


def _reactor_idle() -> float:
    """The share of wall time since the last scrape that the calling (reactor) thread did not
    spend on the CPU: what Kafka's idle-percent gauges tell, for our one thread."""
    now_cpu, now_wall = time.thread_time(), time.monotonic()
    with _idle_lock:
        if not _idle_last:
            _idle_last.extend((now_cpu, now_wall))
            return 1.0
        cpu = now_cpu - _idle_last[0]
        wall = now_wall - _idle_last[1]
        _idle_last[:] = [now_cpu, now_wall]
    if wall <= 0:
        return 1.0
    return min(1.0, max(0.0, 1.0 - cpu / wall))


def _disk_bytes() -> tuple[int, int]:
    """(read_bytes, write_bytes) of this process from /proc/self/io (0, 0 where there is
    none)."""
    try:
        with open("/proc/self/io", encoding="ascii") as handle:
            fields = dict(
                line.split(": ", 1) for line in handle.read().splitlines() if ": " in line
            )
        return int(fields.get("read_bytes", 0)), int(fields.get("write_bytes", 0))
    except OSError:
        return 0, 0


class RuntimeCollector:
    """The JVM figures Kafka dashboards chart, given the Python process's equivalents: memory
    in use (resident set), live threads, and garbage collections per generation with the time
    they took (measured through ``gc.callbacks``)."""

    def __init__(self) -> None:
        self.collections: dict[str, int] = {}
        self.seconds: dict[str, float] = {}
        self._started: float | None = None
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        if self._started is None:
            return
        name = f"generation{info.get('generation', 0)}"
        self.collections[name] = self.collections.get(name, 0) + 1
        self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - self._started
        self._started = None

    def collect(self) -> Iterator[Metric]:
        memory = GaugeMetricFamily(
            "jvm_memory_used_bytes", "Resident memory of the process (area=heap)", labels=["area"]
        )
        memory.add_metric(["heap"], _resident_bytes())
        yield memory
        yield GaugeMetricFamily(
            "jvm_threads_current", "Threads of the process", value=threading.active_count()
        )
        collections = Metric("jvm_gc_collection_seconds", "Python garbage collections", "summary")
        for name in sorted(self.collections):
            collections.add_sample(
                "jvm_gc_collection_seconds_count", {"gc": name}, self.collections[name]
            )
            collections.add_sample(
                "jvm_gc_collection_seconds_sum", {"gc": name}, self.seconds[name]
            )
        yield collections


#: One per process: it hooks ``gc.callbacks`` once, however many brokers the process runs.
RUNTIME = RuntimeCollector()


def _resident_bytes() -> int:
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            pages = int(handle.read().split()[1])
    except (OSError, IndexError, ValueError):
        return 0
    import resource

    return pages * resource.getpagesize()


__all__ = ["CONTENT_TYPE", "PrometheusExposition", "QUANTILES"]
