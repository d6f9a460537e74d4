"""The partition layer: each partition this broker hosts, as leader or follower, and the manager every append and leadership question goes through (Kafka's Partition and ReplicaManager)."""
