"""wireserver: a Kafka-wire-protocol broker on Twisted (the networked side of the project)."""
