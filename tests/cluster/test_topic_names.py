"""A cluster broker finds a topic by id in ZooKeeper's topics and its own logs' without
merging them into a dict per request (``wireserver.cluster.metadata.TopicNames``)."""

import uuid

from wireserver.cluster.metadata import TopicNames
from wireserver.cluster.zkdata import TopicAssignment
from wireserver.storage.manager import TopicTable


def assignment(name: str, topic_id: uuid.UUID) -> TopicAssignment:
    return TopicAssignment(name, topic_id, {0: [1]})


def test_ids_resolve_through_zookeeper_first_and_a_replaced_log_id_is_unknown():
    zookeeper: TopicTable[TopicAssignment] = TopicTable()
    logs_by_id: dict[uuid.UUID, str] = {}
    names = TopicNames(zookeeper, logs_by_id)
    in_both, only_logs, old, new = (uuid.uuid4() for _ in range(4))

    zookeeper["a"] = assignment("a", in_both)
    logs_by_id[in_both] = "a"
    logs_by_id[only_logs] = "b"  # created here, not yet seen through ZooKeeper
    logs_by_id[old] = "c"  # deleted and created again: ZooKeeper has the new id
    zookeeper["c"] = assignment("c", new)

    assert names[in_both] == "a" and names[only_logs] == "b" and names[new] == "c"
    assert old not in names and names.get(old) is None
    assert dict(names) == {in_both: "a", only_logs: "b", new: "c"} and len(names) == 3

    del zookeeper["c"]  # the deletion reached this broker's watch before its logs went
    assert names.get(new) is None and names[old] == "c"
