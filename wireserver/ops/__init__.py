"""The operations side of a broker: what operators watch it through, never record data.

An HTTP listener (``metrics.listeners``) in the broker's reactor serves ``/metrics`` in
Prometheus' text format (``prometheus``), a status page at ``/`` and its data as JSON under
``/api/``. Everything here reads the broker's state through ``OpsHost`` (``host``) and is
imported by ``wireserver.broker`` only.
"""
