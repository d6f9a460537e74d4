"""The two brokers ``benchmarks.scaling`` measures, behind one small interface: start, restart
(clean or ``kill -9``) with the same data, stop, and where the process and its data are.

``KafkaTarget`` is one KRaft node of the reference Apache Kafka (``compat_tests.reference``);
``WireserverTarget`` is ``wireserver serve`` in its own process (``wireserver.testing``). Both
get the same probe for "started": the first Metadata answer that lists the broker.
"""

from __future__ import annotations

import math
import os
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.compare import (
    KAFKA_DELETE_AT_ONCE,
    NO_CONTROLS,
    Pinning,
    spawning_build,
    wait_metadata,
)


@dataclass
class Figure:
    """One measured value: ``metric`` at ``size`` of ``dimension`` (what every dimension of
    ``benchmarks.scaling`` returns)."""

    dimension: str
    size: int
    metric: str
    value: float | None  # None when the run failed
    note: str = ""
    #: Each round's value when the figure was measured more than once on the same broker
    #: (``value`` is then their median; ``benchmarks.scaling`` shows their spread).
    rounds: tuple[float | None, ...] = ()

    @property
    def measured_rounds(self) -> list[float]:
        """The rounds that gave a value."""
        return [v for v in self.rounds if v is not None and not math.isnan(v)]


def median_of_rounds(
    dimension: str, size: int, metric: str, values: list[float | None], note: str = ""
) -> Figure:
    """A figure measured once per round: the median of the rounds that gave a value (None
    when none did), keeping every round's value."""
    figure = Figure(dimension, size, metric, None, note, tuple(values))
    if figure.measured_rounds:
        figure.value = statistics.median(figure.measured_rounds)
    return figure


def mean_of_rounds(dimension: str, size: int, metric: str, values: list[float]) -> Figure:
    """A load's CPU taken in every round: their mean, the CPU over all the rounds."""
    note = f"mean of {len(values)} rounds" if len(values) > 1 else ""
    return Figure(dimension, size, metric, statistics.fmean(values), note)


def dir_bytes(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


class Target:
    """One broker under measurement. ``start`` and ``restart`` return the seconds until the
    broker answered Metadata."""

    name = ""
    version = ""

    def __init__(self, pinning: Pinning, broker_props: dict[str, str] | None = None):
        self.pinning = pinning
        self.broker_props = dict(broker_props or {})
        self.root = Path(tempfile.mkdtemp(prefix=f"scaling-{self.name.lower()}-"))

    @property
    def bootstrap(self) -> str:
        raise NotImplementedError

    @property
    def pid(self) -> int:
        raise NotImplementedError

    @property
    def data_dir(self) -> Path:
        raise NotImplementedError

    def start(self) -> float:
        raise NotImplementedError

    def restart(self, *, kill: bool = False) -> float:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Stop and delete the data."""
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def _timed(self, start, alive) -> float:
        began = time.perf_counter()
        start()
        wait_metadata(self.bootstrap, 600, alive)
        took = time.perf_counter() - began
        self.pinning.pin_tree(self.pid)
        return took


class KafkaTarget(Target):
    """Kafka removes a deleted topic's files ``log.segment.delete.delay.ms`` (60 s) after the
    deletion, wireserver at once; with the delay 0 here, as in ``benchmarks.compare``, each
    broker's next timed step after a deletion runs in that deletion's wake (on this machine's
    file system, creating files right after removing thousands is several times slower)."""

    name = "Kafka"

    def __init__(self, pinning: Pinning, broker_props: dict[str, str] | None = None):
        from compat_tests.reference import KAFKA_VERSION

        super().__init__(pinning, {**KAFKA_DELETE_AT_ONCE, **(broker_props or {})})
        self.version = KAFKA_VERSION
        self.cluster = None

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap_servers

    @property
    def pid(self) -> int:
        return self.cluster.nodes[0].process.pid

    @property
    def data_dir(self) -> Path:
        return Path(self.cluster.nodes[0].data_dir)

    def _alive(self) -> bool:
        return self.cluster.nodes[0].running()

    def start(self) -> float:
        from compat_tests.reference import KafkaCluster

        class Polled(KafkaCluster):
            """Readiness polled every 10 ms with the probe wireserver gets too."""

            def wait_ready(self, timeout=None, nodes=None):
                node = self.nodes[0]
                wait_metadata(node.address, timeout or self.startup_timeout, node.running)

        self.cluster = Polled(
            nodes=1,
            broker_props=self.broker_props,
            workdir=self.root / "kafka",
            keep_workdir=True,
            startup_timeout=600,
        )

        def spawn() -> None:
            with self.pinning.as_broker():
                self.cluster.start()

        return self._timed(spawn, lambda: True)

    def restart(self, *, kill: bool = False) -> float:
        if kill:
            self.cluster.kill(0)
        else:
            self.cluster.stop_node(0, timeout=120)

        def spawn() -> None:
            with self.pinning.as_broker():
                self.cluster.start_node(0, wait=False)

        return self._timed(spawn, self._alive)

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.stop(timeout=120, remove_workdir=False)


class WireserverTarget(Target):
    name = "wireserver"

    def __init__(self, pinning: Pinning, broker_props: dict[str, str] | None = None):
        from wireserver.cli import version

        super().__init__(pinning, broker_props)
        self.version = version()
        self.broker = None

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap_servers

    @property
    def pid(self) -> int:
        return self.broker.pid

    @property
    def data_dir(self) -> Path:
        return Path(self.broker.data_dir)

    def _alive(self) -> bool:
        return self.broker.process is not None and self.broker.process.poll() is None

    def start(self) -> float:
        from wireserver.testing import EmbeddedBroker

        self.broker = EmbeddedBroker(
            "subprocess",
            data_dir=str(self.root / "data"),
            overrides={**NO_CONTROLS, **self.broker_props},
            startup_timeout=600,
            log_level=["WARNING"],
        )

        def spawn() -> None:
            with self.pinning.as_broker(), spawning_build():
                self.broker.start()

        return self._timed(spawn, lambda: True)

    def restart(self, *, kill: bool = False) -> float:
        if kill:
            self.broker.kill()
        else:
            # As long as Kafka's stop may take (KafkaTarget): a clean stop cut short by a kill
            # would make the next start-up a recovery.
            self.broker.stop(timeout=120)

        def spawn() -> None:
            with self.pinning.as_broker(), spawning_build():
                self.broker.start()

        return self._timed(spawn, self._alive)

    def stop(self) -> None:
        if self.broker is not None:
            self.broker.stop(timeout=120)

    def close(self) -> None:
        if self.broker is not None:
            self.broker.close()
        super().close()


TARGETS = {"kafka": KafkaTarget, "wireserver": WireserverTarget}
