"""``/metrics``: the broker's state and meters in Prometheus' text format, under the names the
Prometheus JMX exporter's widely used Kafka rules give Kafka's MBeans, so that dashboards built
for Kafka work unchanged.

The rules lower-case ``kafka.<domain><type=T, name=N, k=v...>`` to ``kafka_<domain>_<t>_<n>``
with the ``k=v`` pairs as labels: ``...PerSec`` meters become counters ending in ``_total``,
gauges keep the name, ``...Percent`` gauges end in ``_percent``, and histograms become a
``_count`` counter plus one gauge per percentile with a ``quantile`` label. Consumer-group lag
is named as the widely used Kafka exporter names it (``kafka_consumergroup_lag``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

if TYPE_CHECKING:
    from wireserver.ops.host import OpsHost

CONTENT_TYPE = CONTENT_TYPE_LATEST


class PrometheusExposition:
    """One broker's ``/metrics``: a registry holding the collectors that read ``host`` at each
    scrape."""

    def __init__(self, host: OpsHost):
        self.host = host
        self.registry = CollectorRegistry(auto_describe=False)

    def render(self) -> bytes:
        """The text of one scrape."""
        return generate_latest(self.registry)
