"""A randomized fault campaign: continuous load on a 3-broker cluster, one fault at a time
applied and healed, then the checker's verdict.

    result = Campaign(target, seed=7, duration=300, workdir=DIR).run()
    print(format_table([result]))

Faults are drawn by a seeded random generator from :data:`FAULTS`, every kind once (in a seeded
order) before any kind twice, so a short campaign still covers them all. Each fault holds for a
drawn time (pauses longer than the ZooKeeper session timeout), is healed, and the campaign waits
until every broker answers again (the recovery time, bounded by ``recovery_bound``) before the
next one.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable

from chaos import checker
from chaos.faults import Firewall, pause, resume

log = logging.getLogger("chaos")

TOPIC = "chaos"
TXN_TOPIC = "chaos-txn"
PARTITIONS = 3
GROUP = "chaos-group"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclasses.dataclass
class Result:
    target: str
    seed: int
    unclean: bool
    seconds: float = 0.0
    faults: Counter = dataclasses.field(default_factory=Counter)
    producers: checker.ProducerVerdict | None = None
    transactions: checker.TxnVerdict | None = None
    offsets_backwards: list[str] = dataclasses.field(default_factory=list)
    divergent: list[str] = dataclasses.field(default_factory=list)
    unavailable_seconds: float = 0.0
    recovery_seconds: list[float] = dataclasses.field(default_factory=list)
    unrecovered: list[str] = dataclasses.field(default_factory=list)
    events: list[str] = dataclasses.field(default_factory=list)
    #: (fault kind, wall-clock start, wall-clock end of its window: until the next fault)
    windows: list[tuple[str, float, float]] = dataclasses.field(default_factory=list)
    #: fault kind -> seconds without any acknowledgement that began inside its windows
    unavailable_by_fault: Counter = dataclasses.field(default_factory=Counter)

    @property
    def problems(self) -> list[str]:
        """What the guarantees forbid (with unclean election, lost records are allowed: they
        are reported in the table, not listed here)."""
        found = []
        p, t = self.producers, self.transactions
        if p is not None:
            if p.lost and not self.unclean:
                found.append(f"{len(p.lost)} acknowledged records lost: {p.lost[:5]}")
            if p.duplicated:
                found.append(f"{len(p.duplicated)} records duplicated: {p.duplicated[:5]}")
            if p.wrong_offset and not self.unclean:
                found.append(f"{len(p.wrong_offset)} at another offset: {p.wrong_offset[:5]}")
            if p.reordered:
                found.append(f"{p.reordered} records out of order")
        if t is not None:
            if t.committed_lost and not self.unclean:
                found.append(f"committed transactional records lost: {t.committed_lost[:5]}")
            if t.duplicated:
                found.append(f"transactional records duplicated: {t.duplicated[:5]}")
            if t.aborted_read:
                found.append(f"aborted records read: {t.aborted_read[:5]}")
            if t.partial:
                found.append(f"transactions read in part: {t.partial[:5]}")
            if t.uncommitted_read:
                found.append(f"uncommitted records read live: {t.uncommitted_read[:5]}")
        if self.offsets_backwards:
            found.append(f"group offsets went backwards: {self.offsets_backwards[:5]}")
        if self.divergent and not self.unclean:
            found.append(f"divergent replicas: {self.divergent}")
        found += [f"not serving after healing: {u}" for u in self.unrecovered]
        return found


class Campaign:
    def __init__(
        self,
        target,
        seed: int,
        duration: float,
        workdir: str,
        unclean: bool = False,
        fault_seconds: tuple[float, float] = (6.0, 12.0),
        quiet_seconds: tuple[float, float] = (2.0, 5.0),
        recovery_bound: float = 60.0,
        faults: list[str] | None = None,
        rate: float = 100.0,
        max_faults: int | None = None,
    ):
        """``max_faults`` ends the campaign after that many faults even before ``duration``
        (the CI variant runs every kind once: ``max_faults=len(FAULTS)``)."""
        self.target = target
        self.rng = random.Random(seed)
        self.duration = duration
        self.workdir = workdir
        self.fault_seconds = fault_seconds
        self.quiet_seconds = quiet_seconds
        self.recovery_bound = recovery_bound
        self.fault_names = list(faults or FAULTS)
        self.rate = rate
        self.max_faults = max_faults
        self.firewall = Firewall(target.network)
        self.client = target.network.add("client")
        self.result = Result(target.name, seed, unclean)
        self.workloads: list[tuple[str, str, subprocess.Popen]] = []
        self.offset_samples: list[tuple[float, dict[int, int]]] = []
        self._sampling = threading.Event()

    # -- the run ------------------------------------------------------------------------------

    def run(self) -> Result:
        os.makedirs(self.workdir, exist_ok=True)
        started = time.monotonic()
        target = self.target
        target.create_topic(TOPIC, PARTITIONS, {"min.insync.replicas": "2"})
        target.create_topic(TXN_TOPIC, PARTITIONS, {"min.insync.replicas": "2"})
        self._wait_settled(120)
        self._start_workloads()
        sampler = threading.Thread(target=self._sample_offsets, daemon=True)
        sampler.start()
        time.sleep(3)  # load before the first fault
        try:
            order: list[str] = []
            while time.monotonic() - started < self.duration and (
                self.max_faults is None or sum(self.result.faults.values()) < self.max_faults
            ):
                if not order:
                    order = list(self.fault_names)
                    self.rng.shuffle(order)
                self._one_fault(order.pop(0))
        finally:
            self._heal_everything()
            self._stop_workloads()
            self._sampling.set()
            sampler.join(10)
        self._wait_settled(180)
        self._check()
        self.result.seconds = time.monotonic() - started
        return self.result

    def _event(self, text: str) -> None:
        line = f"{time.strftime('%H:%M:%S')} {text}"
        log.info("%s", line)
        self.result.events.append(line)

    def _one_fault(self, name: str) -> None:
        hold = self.rng.uniform(*self.fault_seconds)
        start = time.time()
        description, heal = FAULTS[name](self)
        self.result.faults[name] += 1
        self._event(f"fault {name}: {description} for {hold:.1f} s")
        time.sleep(hold)
        heal()
        healed = time.monotonic()
        self._event(f"healed {name}")
        self._wait_recovered(name, healed)
        time.sleep(self.rng.uniform(*self.quiet_seconds))
        self.result.windows.append((name, start, time.time()))

    def _wait_recovered(self, name: str, healed: float) -> None:
        """Until every broker answers and lists every broker, bounded."""
        brokers = sorted(self.target.broker_nodes)
        deadline = healed + self.recovery_bound
        while time.monotonic() < deadline:
            meta = self.target.metadata()
            if (
                meta is not None
                and meta[1] == brokers
                and all(self.target.answers(b) for b in brokers)
            ):
                self.result.recovery_seconds.append(time.monotonic() - healed)
                return
            time.sleep(0.2)
        self.result.unrecovered.append(f"{name}: after {self.recovery_bound:.0f} s")
        self._event(f"NOT recovered {self.recovery_bound:.0f} s after healing {name}")

    def _heal_everything(self) -> None:
        self.firewall.heal()
        for pid in self.target.coordination_pids():
            resume(pid)
        self.target.start_coordination()
        for broker_id in self.target.broker_nodes:
            pid = self.target.broker_pid(broker_id)
            if pid is not None:
                resume(pid)
            else:
                self.target.start_broker(broker_id)
        for disk in getattr(self.target, "disks", {}).values():
            disk.free()

    def _wait_settled(self, timeout: float) -> None:
        """Until both topics have a leader and every replica in sync everywhere."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ok = True
            for topic in (TOPIC, TXN_TOPIC):
                meta = self.target.metadata(topic)
                if (
                    meta is None
                    or len(meta[2]) != PARTITIONS
                    or not all(p[0] >= 0 and sorted(p[3]) == sorted(p[2]) for p in meta[2].values())
                ):
                    ok = False
            if ok:
                return
            time.sleep(0.5)
        self.result.unrecovered.append(f"replicas not all in sync {timeout:.0f} s after the end")

    # -- workloads ----------------------------------------------------------------------------

    def _start_workloads(self) -> None:
        plan = [
            ("producer", "p1", TOPIC),
            ("java", "j7", TOPIC),
            ("txn", "t1", TXN_TOPIC),
            ("reader", "r1", TXN_TOPIC),
            ("group", "g1", TOPIC),
            ("group", "g2", TOPIC),
        ]
        env = dict(os.environ, PYTHONPATH=ROOT)
        for kind, ident, topic in plan:
            out = os.path.join(self.workdir, f"{self.target.name}-{ident}.jsonl")
            if os.path.exists(out):
                os.unlink(out)
            rate = self.rate if kind in ("producer", "java") else max(1.0, self.rate / 20)
            argv = [
                *self.target.network.prefix(self.client),
                sys.executable, "-m", "chaos.workload", kind,
                "--bootstrap", self.target.bootstrap, "--topic", topic,
                "--id", ident, "--out", out, "--rate", str(rate),
            ]  # fmt: skip
            errors = open(out + ".stderr", "wb")  # noqa: SIM115
            process = subprocess.Popen(
                argv, env=env, stdout=subprocess.DEVNULL, stderr=errors, cwd=ROOT
            )
            errors.close()
            self.workloads.append((kind, out, process))

    def _stop_workloads(self) -> None:
        for _, _, process in self.workloads:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for _, _, process in self.workloads:
            try:
                process.wait(90)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def _sample_offsets(self) -> None:
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        consumer = Consumer(
            {"bootstrap.servers": self.target.bootstrap, "group.id": GROUP, "log_level": 0,
             "socket.timeout.ms": 5000}
        )  # fmt: skip
        try:
            while not self._sampling.wait(0.5):
                try:
                    found = consumer.committed(
                        [TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=5
                    )
                except KafkaException:
                    continue
                self.offset_samples.append(
                    (time.time(), {tp.partition: tp.offset for tp in found if tp.error is None})
                )
        finally:
            consumer.close()

    # -- verdict ------------------------------------------------------------------------------

    def _check(self) -> None:
        result = self.result
        histories: dict[str, list[list[dict]]] = {
            kind: [] for kind in ("producer", "txn", "reader", "group")
        }
        for kind, out, _ in self.workloads:
            histories["producer" if kind == "java" else kind].append(checker.load(out))
        bootstrap = self.target.bootstrap
        log_plain = checker.read_topic(bootstrap, TOPIC, PARTITIONS, committed_only=False)
        result.producers = checker.check_producers(histories["producer"], log_plain)
        if result.producers.duplicated:
            self._explain_duplicates(histories["producer"], result.producers.duplicated)
        log_committed = checker.read_topic(bootstrap, TXN_TOPIC, PARTITIONS, committed_only=True)
        result.transactions = checker.check_transactions(
            histories["txn"], histories["reader"], log_committed
        )
        result.offsets_backwards = checker.check_offsets(self.offset_samples)
        acks = sorted(e["t"] for h in histories["producer"] for e in h if e.get("k") == "ack")
        gaps = [(a, b - a) for a, b in zip(acks, acks[1:]) if b - a > 1.0]
        result.unavailable_seconds = sum(length for _, length in gaps)
        for began, length in gaps:
            for name, start, end in result.windows:
                if start <= began < end:
                    result.unavailable_by_fault[name] += length
        data_dirs = {b: self.target.data_dir(b) for b in self.target.broker_nodes}
        for topic in (TOPIC, TXN_TOPIC):
            meta = self.target.metadata(topic)
            for partition, (leader, _, replicas, _) in sorted(meta[2].items()):
                high = _high_watermark(bootstrap, topic, partition)
                bad = checker.divergent_replicas(
                    {b: data_dirs[b] for b in replicas}, topic, partition, leader, high
                )
                result.divergent += [f"{topic}-{partition} on broker {b}" for b in bad]

    def _explain_duplicates(self, histories: list[list[dict]], duplicated: list[str]) -> None:
        """Events that say where duplicates came from (CI keeps only the failure's text): the
        fault windows their acknowledgements fell in, and what the producers logged of epochs,
        re-sequenced batches and sequence errors."""
        acked = {e["v"]: e["t"] for h in histories for e in h if e.get("k") == "ack"}
        windows: Counter = Counter()
        for entry in duplicated:
            t = acked.get(entry.split(" at ", 1)[0])
            name = next(
                (n for n, a, b in self.result.windows if t is not None and a <= t < b), None
            )
            windows[name or ("unacknowledged" if t is None else "no fault window")] += 1
        self._event(
            "duplicates acknowledged in: " + ", ".join(f"{n} {c}" for n, c in windows.items())
        )
        for kind, out, _ in self.workloads:
            if kind not in ("producer", "java"):
                continue
            try:
                with open(out + ".stderr", encoding="utf-8", errors="replace") as handle:
                    lines = [line.strip() for line in handle if _EXPLAINS.search(line)]
            except OSError:
                continue
            for line in lines[:12]:
                self.result.events.append(f"{os.path.basename(out)}: {line[:300]}")
            if len(lines) > 12:
                self.result.events.append(f"{os.path.basename(out)}: ... {len(lines) - 12} more")


#: Producer log lines that explain duplicates: sequence errors, epoch bumps, re-sequencing.
_EXPLAINS = re.compile(
    r"OUT_OF_ORDER_SEQUENCE|DUPLICATE_SEQUENCE|UNKNOWN_PRODUCER|bump|Resetting sequence"
    r"|ProducerId set|epoch|The broker returned",
    re.IGNORECASE,
)


def _high_watermark(bootstrap: str, topic: str, partition: int) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "chaos-checker"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)[1]
    finally:
        consumer.close()


# -- the faults: each applies itself and returns (description, heal) ---------------------------


def _random_broker(c: Campaign) -> int:
    return c.rng.choice(sorted(c.target.broker_nodes))


def _leader(c: Campaign, topic: str = TOPIC) -> int:
    meta = c.target.metadata(topic)
    leaders = sorted({p[0] for p in meta[2].values() if p[0] >= 0}) if meta else []
    return c.rng.choice(leaders) if leaders else _random_broker(c)


def _controller(c: Campaign) -> int:
    meta = c.target.metadata()
    return meta[0] if meta and meta[0] in c.target.broker_nodes else _random_broker(c)


def _two_brokers(c: Campaign) -> tuple[int, int]:
    a, b = c.rng.sample(sorted(c.target.broker_nodes), 2)
    return a, b


def partition_brokers(c: Campaign):
    a, b = _two_brokers(c)
    nodes = c.target.broker_nodes
    c.firewall.partition(nodes[a], nodes[b])
    return f"brokers {a} and {b} cut apart", c.firewall.heal


def one_way_brokers(c: Campaign):
    a, b = _two_brokers(c)
    nodes = c.target.broker_nodes
    c.firewall.block(nodes[a], nodes[b])
    return f"broker {a} hears nothing from broker {b}", c.firewall.heal


def partition_broker_coordination(c: Campaign):
    broker = _leader(c)
    for node in c.target.coordination_nodes():
        c.firewall.partition(c.target.broker_nodes[broker], node)
    return f"leader {broker} cut from {c.target.coordination}", c.firewall.heal


def one_way_broker_coordination(c: Campaign):
    broker = _leader(c)
    for node in c.target.coordination_nodes():
        c.firewall.block(node, c.target.broker_nodes[broker])
    return f"{c.target.coordination} hears nothing from leader {broker}", c.firewall.heal


def partition_client_leader(c: Campaign):
    broker = _leader(c)
    c.firewall.partition(c.client, c.target.broker_nodes[broker])
    return f"clients cut from leader {broker}", c.firewall.heal


def isolate_leader(c: Campaign):
    broker = _leader(c)
    c.firewall.isolate(c.target.broker_nodes[broker])
    return f"leader {broker} isolated from everyone", c.firewall.heal


def lossy_brokers(c: Campaign):
    a, b = _two_brokers(c)
    nodes = c.target.broker_nodes
    c.firewall.lose(nodes[a], nodes[b], 30)
    c.firewall.lose(nodes[b], nodes[a], 30)
    return f"30 % packet loss between brokers {a} and {b}", c.firewall.heal


def _delay(c: Campaign, node, delay_ms: float, jitter_ms: float, loss: float, peers=None):
    from chaos.netem import Netem

    netem = Netem(node.namespace, "eth0", delay_ms, jitter_ms, loss, peers)
    netem.__enter__()
    return lambda: netem.__exit__(None, None, None)


def delay_leader(c: Campaign):
    broker = _leader(c)
    heal = _delay(c, c.target.broker_nodes[broker], 150, 100, 0.0)
    return f"leader {broker} sends everything 150 ± 100 ms late", heal


def slow_lossy_clients(c: Campaign):
    broker = _leader(c)
    leader = c.target.broker_nodes[broker]
    heal = _delay(c, c.client, 100, 50, 10.0, [leader.ip])
    return f"clients to leader {broker}: 100 ± 50 ms late, 10 % lost", heal


def _pause_broker(c: Campaign, broker: int, what: str):
    pid = c.target.broker_pid(broker)
    if pid is None:
        return f"{what} {broker} not running", lambda: None
    pause(pid)
    return f"{what} {broker} paused (SIGSTOP)", lambda: resume(pid)


def pause_leader(c: Campaign):
    return _pause_broker(c, _leader(c), "leader")


def pause_controller(c: Campaign):
    return _pause_broker(c, _controller(c), "controller")


def pause_coordination(c: Campaign):
    pids = c.target.coordination_pids()
    for pid in pids:
        pause(pid)

    def heal() -> None:
        for pid in pids:
            resume(pid)

    return f"{c.target.coordination} paused (SIGSTOP)", heal


def kill_broker(c: Campaign):
    broker = _random_broker(c)
    c.target.kill_broker(broker)
    return f"broker {broker} killed (-9)", lambda: c.target.start_broker(broker)


def kill_leader(c: Campaign):
    broker = _leader(c)
    c.target.kill_broker(broker)
    return f"leader {broker} killed (-9)", lambda: c.target.start_broker(broker)


def kill_coordination(c: Campaign):
    c.target.kill_coordination()
    return f"{c.target.coordination} killed (-9)", c.target.start_coordination


def kill_and_pause(c: Campaign):
    killed, paused = _two_brokers(c)
    c.target.kill_broker(killed)
    pid = c.target.broker_pid(paused)
    if pid is not None:
        pause(pid)

    def heal() -> None:
        if pid is not None:
            resume(pid)
        c.target.start_broker(killed)

    return f"broker {killed} killed (-9) and broker {paused} paused", heal


def kill_and_cut_from_coordination(c: Campaign):
    killed, cut = _two_brokers(c)
    c.target.kill_broker(killed)
    for node in c.target.coordination_nodes():
        c.firewall.partition(c.target.broker_nodes[cut], node)

    def heal() -> None:
        c.firewall.heal()
        c.target.start_broker(killed)

    return f"broker {killed} killed (-9) and broker {cut} cut from {c.target.coordination}", heal


def full_disk(c: Campaign):
    broker = _leader(c)
    disk = c.target.disks[broker]
    written = disk.fill()

    def heal() -> None:
        disk.free()
        if not c.target.broker_running(broker):  # it halted, as Kafka does on a failed log dir
            c.target.start_broker(broker)

    return f"log dir of leader {broker} full ({written >> 20} MB ballast)", heal


FAULTS: dict[str, Callable[[Campaign], tuple[str, Callable[[], None]]]] = {
    "partition-brokers": partition_brokers,
    "one-way-brokers": one_way_brokers,
    "partition-broker-zk": partition_broker_coordination,
    "one-way-broker-zk": one_way_broker_coordination,
    "partition-client-leader": partition_client_leader,
    "isolate-leader": isolate_leader,
    "loss-brokers": lossy_brokers,
    "delay-leader": delay_leader,
    "delay-loss-clients": slow_lossy_clients,
    "pause-leader": pause_leader,
    "pause-controller": pause_controller,
    "pause-zk": pause_coordination,
    "kill-broker": kill_broker,
    "kill-leader": kill_leader,
    "kill-zk": kill_coordination,
    "kill-and-pause": kill_and_pause,
    "kill-and-partition": kill_and_cut_from_coordination,
    "full-disk": full_disk,
}


def format_table(results: list[Result]) -> str:
    """One column per run: faults, records, what the checker found, availability."""
    rows: list[tuple[str, list[str]]] = []

    def row(label: str, values) -> None:
        rows.append((label, [str(v) for v in values]))

    row("target", [r.target + (" (unclean)" if r.unclean else "") for r in results])
    row("seed / seconds", [f"{r.seed} / {r.seconds:.0f}" for r in results])
    row("faults injected", [sum(r.faults.values()) for r in results])
    row("records acknowledged", [r.producers.acknowledged if r.producers else "-" for r in results])
    row("lost", [len(r.producers.lost) if r.producers else "-" for r in results])
    row("duplicated", [len(r.producers.duplicated) if r.producers else "-" for r in results])
    row("reordered", [r.producers.reordered if r.producers else "-" for r in results])
    row(
        "at another offset",
        [len(r.producers.wrong_offset) if r.producers else "-" for r in results],
    )
    row(
        "unacknowledged but written",
        [r.producers.unacknowledged_present if r.producers else "-" for r in results],
    )
    row(
        "transactions commit/abort/unknown",
        [
            f"{r.transactions.committed}/{r.transactions.aborted}/{r.transactions.unknown}"
            if r.transactions
            else "-"
            for r in results
        ],
    )
    row(
        "committed txn records lost",
        [len(r.transactions.committed_lost) if r.transactions else "-" for r in results],
    )
    row(
        "aborted or uncommitted read",
        [
            len(r.transactions.aborted_read)
            + len(r.transactions.uncommitted_read)
            + len(r.transactions.partial)
            if r.transactions
            else "-"
            for r in results
        ],
    )
    row("group offsets backwards", [len(r.offsets_backwards) for r in results])
    row("divergent replicas", [len(r.divergent) for r in results])
    row("seconds without acks", [f"{r.unavailable_seconds:.1f}" for r in results])
    row(
        "recovery after healing, max s",
        [f"{max(r.recovery_seconds):.1f}" if r.recovery_seconds else "-" for r in results],
    )
    row("not serving after healing", [len(r.unrecovered) for r in results])
    width = max(len(label) for label, _ in rows)
    widths = [max(len(values[i]) for _, values in rows) for i in range(len(results))]
    lines = []
    for label, values in rows:
        cells = "  ".join(v.rjust(w) for v, w in zip(values, widths))
        lines.append(f"{label.ljust(width)}  {cells}")
    kinds = sorted({k for r in results for k in r.faults})
    lines.append("")
    for r in results:
        lines.append(f"{r.target}: seconds without acks by fault: " + ", ".join(
            f"{k} {v:.1f}" for k, v in r.unavailable_by_fault.most_common()))  # fmt: skip
    lines.append("faults by kind: " + ", ".join(
        f"{k} " + "/".join(str(r.faults.get(k, 0)) for r in results) for k in kinds))  # fmt: skip
    return "\n".join(lines)
