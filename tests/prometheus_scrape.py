"""Scraping a broker's ``/metrics`` over HTTP as Prometheus does, for the tests that read it
(tests/ops/test_prometheus.py, tests/cluster/test_metrics.py)."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

#: sample name -> [(labels, value)]
Samples = dict[str, list[tuple[dict[str, str], float]]]


def scrape(ops_url: str) -> Samples:
    """One scrape of ``ops_url``/metrics."""
    with urllib.request.urlopen(ops_url + "/metrics", timeout=10) as response:
        text = response.read().decode()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


def matching(samples: Samples, name: str, **labels: str) -> list[float]:
    """The values of ``name``'s samples that carry ``labels``."""
    return [
        value
        for have, value in samples.get(name, [])
        if all(have.get(key) == wanted for key, wanted in labels.items())
    ]
