"""The compatibility suite: the same scenarios against a reference Apache Kafka and wireserver.

The reference release is Kafka 4.4.0 (``DEFAULT_KAFKA_VERSION`` in reference/resolve.py, pinned
in reference/pom.xml); ``WIRESERVER_KAFKA_VERSION=<version>`` (e.g. ``4.4.0``) compares against
another release instead (4.1.1 stays selectable), without editing code: Maven resolves that version's jars into their
own cache directory on first use, and the conformance tests (tests/protocol/test_conformance.py)
and the benchmarks follow the same variable.
"""
