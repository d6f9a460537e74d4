"""benchmarks.compare: what a Java tool's row says besides its median."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from benchmarks.compare import (
    MIB,
    _java_figure,
    _paired_note,
    busy_share,
    cpu_busy_ticks,
    cpu_seconds,
)


def test_a_java_row_gives_the_median_the_spread_and_both_sides_cpu_per_100_mb():
    # three runs of 100 MiB each: 2 s of broker CPU and 30 s of the tool's in all
    runs = [
        {"mib_per_s": mib, "records_per_s": mib * 1024, "broker_cpu_s": 2 / 3, "client_cpu_s": 10}
        for mib in (20.0, 30.0, 25.0)
    ]
    mib_s, note = _java_figure(runs, 100 * MIB)
    assert mib_s == 25.0
    assert note == (
        " (26 k rec/s; broker 667 ms CPU/100 MB; client 10000 ms CPU/100 MB;"
        " median of 3 runs, 20–30)"
    )


def test_a_java_producer_row_says_how_long_its_records_waited():
    """The median of the runs' p50 latency: about half a second when the tool's buffer
    stayed full, a few milliseconds when the broker kept it empty."""
    runs = [
        {"mib_per_s": mib, "records_per_s": mib * 10_000, "p50": p50}
        for mib, p50 in ((55.0, 512.0), (57.0, 498.0), (110.0, 9.0))
    ]
    _, note = _java_figure(runs, 100 * MIB)
    assert note == " (570 k rec/s; the tool's p50 latency 498 ms; median of 3 runs, 55–110)"


def test_a_java_row_says_how_busy_the_client_and_broker_cpus_were():
    """The median of the runs' busy shares of each side's CPU, so a reader sees which side
    was the limit (a client CPU near 100 %: the tool's)."""
    runs = [
        {
            "mib_per_s": mib,
            "records_per_s": mib * 1000,
            "client_cpus_busy": c,
            "broker_cpus_busy": b,
        }
        for mib, c, b in ((180.0, 0.98, 0.51), (186.0, 0.97, 0.48), (179.0, 0.99, 0.50))
    ]
    _, note = _java_figure(runs, 100 * MIB)
    assert note == (
        " (180 k rec/s; CPU busy: the client's 98 %, the broker's 50 %; median of 3 runs, 179–186)"
    )


def test_a_cpu_kept_busy_reads_busy_and_an_unused_one_idle():
    """``cpu_busy_ticks`` over a busy loop pinned to one CPU: that CPU reads nearly all busy.
    The other is whatever the machine does, but never more busy ticks than ticks."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.fail("the busy-CPU reading needs a machine with two CPUs to pin to")
    loop = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\nend = time.time() + 1.5\nwhile time.time() < end: pass",
        ],
        preexec_fn=lambda: os.sched_setaffinity(0, {cpus[0]}),
    )
    time.sleep(0.3)
    busy_before, other_before = cpu_busy_ticks({cpus[0]}), cpu_busy_ticks({cpus[1]})
    time.sleep(1.0)
    busy_after, other_after = cpu_busy_ticks({cpus[0]}), cpu_busy_ticks({cpus[1]})
    loop.wait()
    assert busy_share(busy_before, busy_after) > 0.9
    assert 0.0 <= busy_share(other_before, other_after) <= 1.0
    assert other_after[1] - other_before[1] > 0


def test_a_java_row_without_cpu_figures_keeps_the_rate_and_spread_only():
    mib_s, note = _java_figure([{"mib_per_s": 8.0, "records_per_s": 8192.0}], 1)
    assert (mib_s, note) == (8.0, " (8 k rec/s)")


def test_alternating_rounds_give_the_median_of_their_ratios_and_the_rounds_ahead():
    kafka = [{"mib_per_s": v} for v in (20.0, 30.0, 40.0, 25.0)]
    ours = [{"mib_per_s": v} for v in (30.0, 27.0, 36.0, 30.0)]  # 1.5, 0.9, 0.9, 1.2
    assert _paired_note(kafka, ours) == "paired: median ratio 1.05×, 2 of 4 rounds above 1"


BURN_ON_EACH_LINE = """
import sys, time
for _ in sys.stdin:
    end = time.thread_time() + 0.003
    while time.thread_time() < end:
        pass
    print("done", flush=True)
"""


def test_cpu_seconds_sees_a_few_milliseconds_that_clock_ticks_round_away():
    # A single-threaded child burns 3 ms of CPU per line it reads; 10 ms clock ticks would
    # read that as 0 or 10 ms, the threads' schedstat as about 3.
    used = cpu_used_per_line(BURN_ON_EACH_LINE)
    assert all(0.0025 < u < 0.008 for u in used[1:]), used


BURN_IN_SHORT_LIVED_THREADS = """
import sys, threading, time
def burn():
    end = time.thread_time() + 0.003
    while time.thread_time() < end:
        pass
for _ in sys.stdin:
    threads = [threading.Thread(target=burn) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print("done", flush=True)
"""


def test_cpu_seconds_keeps_the_time_of_threads_that_ended():
    # Eight threads burn 3 ms each and end before the second reading: their 24 ms are counted
    # (mixing the process's ticks with the live threads' schedstat read this as negative).
    used = cpu_used_per_line(BURN_IN_SHORT_LIVED_THREADS)
    assert all(0.023 < u < 0.045 for u in used[1:]), used


def cpu_used_per_line(script: str) -> list[float]:
    """The CPU time ``cpu_seconds`` reads a child running ``script`` use for each of four lines
    it is sent; the first also holds the child's start-up."""
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        used = []
        for _ in range(4):
            before = cpu_seconds(child.pid)
            child.stdin.write("go\n")
            child.stdin.flush()
            assert child.stdout.readline() == "done\n"
            used.append(cpu_seconds(child.pid) - before)
        return used
    finally:
        child.kill()
        child.wait()


def test_the_producer_tools_steady_state_line_is_the_one_read():
    from benchmarks.compare import _PERF_SUMMARY

    out = (
        "60000 records sent, 22404.779686 records/sec (21.88 MB/sec), 858.10 ms avg latency, "
        "1202.00 ms max latency, 892 ms 50th, 1159 ms 95th, 1196 ms 99th, 1200 ms 99.9th.\n"
        "30000 steady state records sent, 17543.859649 records/sec (17.13 MB/sec), 864.93 ms avg "
        "latency, 1202.00 ms max latency, 838 ms 50th, 1190 ms 95th, 1198 ms 99th, 1201 ms 99.9th.\n"
    )
    last = list(_PERF_SUMMARY.finditer(out))[-1]
    assert (last["records"], last["mbps"], last["p50"]) == ("30000", "17.13", "838")


def test_a_deleted_runs_topic_is_waited_for_until_its_files_are_gone(tmp_path):
    """The Java producer rows start a run once the last run's topic has left the disk."""
    from confluent_kafka import Producer

    from benchmarks.compare import Broker, delete_topic_files
    from wireserver.testing import EmbeddedBroker

    with EmbeddedBroker("thread", data_dir=tmp_path) as embedded:
        embedded.create_topic("run-7", partitions=2)
        producer = Producer({"bootstrap.servers": embedded.bootstrap_servers})
        for i in range(20):
            producer.produce("run-7", b"x" * 1000, partition=i % 2)
        assert producer.flush(10) == 0
        assert sorted(p.name for p in tmp_path.glob("run-7-*")) == ["run-7-0", "run-7-1"]
        broker = Broker(
            "wireserver",
            "",
            embedded.bootstrap_servers,
            0,
            0.0,
            lambda: None,
            data_dir=tmp_path,
        )
        assert delete_topic_files(broker, "run-7") is True
        assert list(tmp_path.glob("run-7-*")) == []


def test_a_broker_is_measured_with_the_other_stopped_and_both_serve_after():
    """While one broker is measured every thread of the other sleeps in SIGSTOP (state T) and
    it does not answer; the measured one answers; afterwards both answer again."""
    from benchmarks.compare import (
        DEFAULT,
        Pinning,
        Results,
        Session,
        _thread_states,
        alone,
        metadata_ok,
        start_wireserver,
    )

    pinning = Pinning(None, None)
    brokers = [start_wireserver(pinning, name=f"ws{i}") for i in range(2)]
    try:
        sessions = [Session(b, DEFAULT, pinning, Results(), False, print) for b in brokers]
        measured, other = sessions
        with alone(sessions, measured):
            assert set(_thread_states(other.b.pid)) == {"T"}
            assert "T" not in _thread_states(measured.b.pid)
            assert metadata_ok(measured.b.bootstrap)
            assert not metadata_ok(other.b.bootstrap)
        assert ["T" in _thread_states(b.pid) for b in brokers] == [False, False]
        assert [metadata_ok(b.bootstrap) for b in brokers] == [True, True]
    finally:
        for b in brokers:
            b.stop()


def test_a_compared_wireserver_runs_without_the_test_controls():
    """Kafka has no test hooks in its request path: a wireserver the harness starts runs as
    ``wireserver serve`` does, without the test controls that ``wireserver.testing``'s
    defaults turn on, and serves."""
    from benchmarks.compare import Pinning, metadata_ok, start_wireserver

    broker = start_wireserver(Pinning(None, None))
    try:
        with open(f"/proc/{broker.pid}/cmdline", "rb") as cmdline:
            args = cmdline.read().split(b"\0")
        assert b"controls.enable=false" in args and b"controls.enable=true" not in args
        assert metadata_ok(broker.bootstrap)
    finally:
        broker.stop()


def test_a_failed_workload_says_how_the_brokers_process_ended():
    """A broker that died under a workload shows in the failure how it ended."""
    import signal

    from benchmarks.compare import DEFAULT, Broker, Pinning, Results, Session, exit_status

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert exit_status(child.pid) is None
        broker = Broker("wireserver", "", "127.0.0.1:1", child.pid, 0.0, lambda: None)
        results = Results()
        session = Session(broker, DEFAULT, Pinning(None, None), results, False, lambda m: None)
        child.send_signal(signal.SIGKILL)
        while exit_status(child.pid) is None:
            pass
        session.failed("k", "produce 100 B", "MB/s", True, "TimeoutError")
        assert results.errors == [
            "wireserver, produce 100 B: TimeoutError (the broker's process was killed by SIGKILL)"
        ]
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL  # still reaped by its Popen
