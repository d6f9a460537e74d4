"""Consumer-group scenarios (classic and KIP-848 protocols, kafka-consumer-groups), registered
with ``compat_tests.scenarios.scenario`` like the others."""

from __future__ import annotations
