"""Test-broker controls (``controls.enable``): make a broker misbehave on purpose, as a real
cluster does, so that a test can watch its client cope. Errors answered without handling,
latency, dropped connections, Kafka-style throttling, refused connections, a listener outage
and a clock that jumps ahead; each applied by a command (``rules``), listed, and undone.

- ``rules``: the commands, their validation and the broker's active controls;
- ``clock``: the reactor proxy whose time can move ahead (``BrokerClock``);
- ``error_responses``: a response of any request carrying an error code on every item;
- ``http``: ``/controls`` on the operations listener; ``wireserver.testing.controls`` is the
  Python API over it (or over ``rules`` directly in a thread-mode broker).

With ``controls.enable=false`` (the default outside ``wireserver.testing``) nothing here is
imported, the reactor is the reactor, and the request path tests one attribute for None.
"""

from __future__ import annotations


class ControlError(ValueError):
    """A control command that was refused (what was wrong is the message); nothing changed."""


class UnknownControl(ControlError):
    """No active control has that id (undone already, or used up by its ``count``)."""
