"""Cluster mode: several brokers coordinated through ZooKeeper (``zookeeper.connect``).

- ``node``: a broker's ZooKeeper session, registration, controller election, view of brokers,
  topics and partition state, and its leader/follower role for each partition (high watermark,
  ISR shrink/expand).
- ``controller``: leader election on topic creation and broker failure.
- ``fetcher`` and ``client``: followers copy the leader's log with the Fetch protocol.
- ``txn_markers``: the transaction coordinator's WriteTxnMarkers to partition leaders.
- ``placement``: Kafka's replica placement.
- ``topic_admin``: DeleteTopics, CreatePartitions and topic config changes written to ZooKeeper
  by the broker that receives them; ``topic_deletion`` (controller) and ``config_changes``
  (every broker) act on them.
- ``zkdata``: znode paths and JSON.
- ``zookeeper`` and ``dev``: running a ZooKeeper server and a development cluster.

Without ``zookeeper.connect`` none of this is loaded and the broker is the single node it
always was.
"""
