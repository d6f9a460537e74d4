"""What the operations listener reads of its broker (``wireserver.broker.Broker`` provides it):
everything handlers may use (``Services``), plus the cluster node, the listeners and the
counters the broker keeps as it serves (``wireserver.metrics.BrokerMetrics``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from wireserver.services import Services

if TYPE_CHECKING:
    from wireserver.config import Listener
    from wireserver.metrics import BrokerMetrics


class OpsHost(Services, Protocol):
    #: the counters and timings of requests, topics and partitions
    metrics: BrokerMetrics
    #: in cluster mode the ``wireserver.cluster.node.ClusterNode``, else None
    cluster: Any
    #: the Kafka listeners as bound (real ports)
    bound: list[Listener]
    #: the reactor itself, whose time no control moves (``reactor`` may be a
    #: ``wireserver.controls.clock.BrokerClock``): the listener's HTTP timeouts run on it
    wall_reactor: Any
    #: ``controls.enable``: the ``wireserver.controls.rules.BrokerControls`` behind
    #: ``/controls``, else None
    controls: Any
