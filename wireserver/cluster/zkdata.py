"""ZooKeeper paths and the JSON of each znode, laid out as Kafka's ZooKeeper-era brokers kept
them (``kafka.zk.ZkData``), and ``update_znode``, the one conditional read-modify-write."""

from __future__ import annotations

import base64
import json
import time
import urllib.parse
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
CONFIG_TOPICS = "/config/topics"
CONFIG_USERS = "/config/users"
CONFIG_GROUPS = "/config/groups"  # ours: Kafka's ZooKeeper-era brokers had no group configs
CONFIG_BROKERS = "/config/brokers"  # dynamic broker configs: <id> and <default>
#: Kafka's ``ConfigEntityName.DEFAULT``: the entity name of the cluster-wide default
DEFAULT_ENTITY = "<default>"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
CLUSTER_ID = "/cluster/id"
PRODUCER_ID_BLOCK = "/latest_producer_id_block"
FEATURE = "/feature"  # finalized feature levels; the znode's version is their epoch
PERSISTENT_PATHS = (
    BROKER_IDS,
    TOPICS,
    CONFIG_TOPICS,
    "/admin/delete_topics",
    "/isr_change_notification",
    "/log_dir_event_notification",
    "/wireserver/offline_replicas",
)


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


def sanitize(name: str) -> str:
    """Kafka's ``Sanitizer.sanitize``: a user name as a znode name (Java's ``URLEncoder``,
    which keeps letters, digits and ``.-_*``, with ``*`` and space then percent-encoded)."""
    return urllib.parse.quote(name, safe="").replace("~", "%7E")


def desanitize(name: str) -> str:
    return urllib.parse.unquote_plus(name)


def user_config_path(user: str) -> str:
    return f"{CONFIG_USERS}/{sanitize(user)}"


def group_config_path(group: str) -> str:
    return f"{CONFIG_GROUPS}/{sanitize(group)}"


def broker_entity(broker_id: int | None) -> str:
    """The entity name of a broker's dynamic configs: its id, or ``<default>`` (None) for
    the cluster-wide default."""
    return DEFAULT_ENTITY if broker_id is None else str(broker_id)


def broker_config_path(broker_id: int | None) -> str:
    """``/config/brokers/<id>`` or ``/config/brokers/<default>``."""
    return f"{CONFIG_BROKERS}/{broker_entity(broker_id)}"


DELETE_TOPICS = "/admin/delete_topics"  # children: topics marked for deletion
CONFIG_CHANGES = "/config/changes"  # children: sequential config change notifications
CONFIG_CHANGE_PREFIX = "config_change_"


#: Kafka's ``LogDirEventNotificationZNode``: a broker whose log dir failed creates a sequential
#: ``log_dir_event_<seq>`` child; the controller handles and deletes it.
LOG_DIR_EVENTS = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
LOG_DIR_FAILURE = 1  # Kafka's ``LogDirEventNotificationHandler.LogDirFailureEvent``
#: ours: ``<id>`` (ephemeral) lists the broker's replicas in failed log dirs, where the
#: controller and the other brokers read them (Kafka's controller learns them from the
#: broker's LeaderAndIsr answers, which ZooKeeper-mode wireserver does not send)
OFFLINE_REPLICAS = "/wireserver/offline_replicas"


def offline_replicas_path(broker_id: int) -> str:
    return f"{OFFLINE_REPLICAS}/{broker_id}"


def encode_log_dir_event(broker_id: int) -> bytes:
    """Kafka's ``LogDirEventNotificationSequenceZNode.encode``."""
    return _dumps({"version": 1, "broker": broker_id, "event": LOG_DIR_FAILURE})


def decode_log_dir_event(data: bytes | None) -> int | None:
    """The broker id of a log dir event, None for one we cannot read."""
    try:
        return int(json.loads(data)["broker"]) if data else None
    except (ValueError, KeyError, TypeError):
        return None


def encode_offline_replicas(log_dirs: list[str], partitions: list[tuple[str, int]]) -> bytes:
    return _dumps(
        {
            "version": 1,
            "log_dirs": log_dirs,
            "partitions": [{"topic": t, "partition": p} for t, p in sorted(partitions)],
        }
    )


def decode_offline_replicas(data: bytes | None) -> set[tuple[str, int]]:
    try:
        doc = json.loads(data) if data else {}
        return {(str(e["topic"]), int(e["partition"])) for e in doc.get("partitions", [])}
    except (ValueError, KeyError, TypeError):
        return set()


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{TOPICS}/{topic}/partitions"


def state_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}/state"


def _dumps(doc: dict) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()


def uuid_to_kafka(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def uuid_from_kafka(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


@dataclass(frozen=True)
class BrokerInfo:
    broker_id: int
    endpoints: dict[str, tuple[str, int]]  # listener name -> (host, port)
    rack: str | None

    def encode(self) -> bytes:
        names = list(self.endpoints)
        host, port = self.endpoints[names[0]] if names else ("", -1)
        doc = {
            "version": 5,
            "host": host,
            "port": port,
            "jmx_port": -1,
            "timestamp": str(int(time.time() * 1000)),
            "features": {},
            "listener_security_protocol_map": {n: "PLAINTEXT" for n in names},
            "endpoints": [f"{n}://{h}:{p}" for n, (h, p) in self.endpoints.items()],
        }
        if self.rack is not None:
            doc["rack"] = self.rack
        return _dumps(doc)

    @classmethod
    def decode(cls, broker_id: int, data: bytes) -> BrokerInfo:
        doc = json.loads(data)
        endpoints = {}
        for text in doc.get("endpoints", []):
            name, _, rest = text.partition("://")
            host, _, port = rest.rpartition(":")
            endpoints[name] = (host.strip("[]"), int(port))
        return cls(broker_id, endpoints, doc.get("rack"))


@dataclass(frozen=True)
class TopicAssignment:
    """``/brokers/topics/<t>``. While a partition is reassigned (KIP-455) its ``replicas`` are
    the full set RS = ORS + TRS, with ``adding`` (TRS - ORS) and ``removing`` (ORS - TRS)
    recorded beside them, as Kafka's v2+ topic znode does."""

    name: str
    topic_id: uuid.UUID
    replicas: dict[int, list[int]]  # partition -> replica broker ids, preferred leader first
    adding: dict[int, list[int]] = field(default_factory=dict)
    removing: dict[int, list[int]] = field(default_factory=dict)

    def encode(self) -> bytes:
        return _dumps(
            {
                "version": 3,
                "topic_id": uuid_to_kafka(self.topic_id),
                "partitions": {str(p): r for p, r in sorted(self.replicas.items())},
                "adding_replicas": {str(p): r for p, r in sorted(self.adding.items()) if r},
                "removing_replicas": {str(p): r for p, r in sorted(self.removing.items()) if r},
            }
        )

    @classmethod
    def decode(cls, name: str, data: bytes) -> TopicAssignment:
        doc = json.loads(data)
        topic_id = doc.get("topic_id")
        return cls(
            name,
            uuid_from_kafka(topic_id) if topic_id else uuid.uuid5(uuid.NAMESPACE_URL, name),
            {int(p): list(r) for p, r in doc["partitions"].items()},
            {int(p): list(r) for p, r in (doc.get("adding_replicas") or {}).items() if r},
            {int(p): list(r) for p, r in (doc.get("removing_replicas") or {}).items() if r},
        )

    def reassigning(self, partition: int) -> bool:
        return bool(self.adding.get(partition) or self.removing.get(partition))

    def origin(self, partition: int) -> list[int]:
        """ORS: the replicas before the reassignment in progress (all of them when none is)."""
        adding = self.adding.get(partition, [])
        return [r for r in self.replicas.get(partition, []) if r not in adding]

    def target(self, partition: int) -> list[int]:
        """TRS: the replicas the partition ends up with."""
        removing = self.removing.get(partition, [])
        return [r for r in self.replicas.get(partition, []) if r not in removing]

    def reassign_to(self, partition: int, target: list[int]) -> TopicAssignment:
        """Kafka's ``ReplicaAssignment.reassignTo``: RS = TRS + ORS (target first, so the
        target's first replica is the preferred leader), AR = RS - ORS, RR = RS - TRS. A
        target equal to ORS ends the reassignment (no adding, no removing)."""
        origin = self.origin(partition)
        full = list(dict.fromkeys(list(target) + origin))
        return self.with_partition(
            partition,
            full,
            [r for r in full if r not in origin],
            [r for r in full if r not in target],
        )

    def with_partition(
        self, partition: int, replicas: list[int], adding: list[int], removing: list[int]
    ) -> TopicAssignment:
        """This assignment with ``partition``'s replicas (and reassignment) replaced."""
        new_adding = {p: r for p, r in self.adding.items() if p != partition}
        new_removing = {p: r for p, r in self.removing.items() if p != partition}
        if adding:
            new_adding[partition] = list(adding)
        if removing:
            new_removing[partition] = list(removing)
        return TopicAssignment(
            self.name,
            self.topic_id,
            {**self.replicas, partition: list(replicas)},
            new_adding,
            new_removing,
        )


def encode_entity_config(config: dict[str, str]) -> bytes:
    """``/config/topics/<t>`` (the topic's overrides), ``/config/users/<user>`` (SCRAM
    credentials, quotas), ``/config/groups/<group>`` (the group's configs) or
    ``/config/brokers/<id>`` (dynamic broker configs)."""
    return _dumps({"version": 1, "config": config})


def decode_entity_config(data: bytes | None) -> dict[str, str]:
    if not data:
        return {}
    return {k: str(v) for k, v in json.loads(data).get("config", {}).items()}


def read_entity_config(zk: Any, path: str) -> dict[str, str]:
    """The config in ``path`` (``/config/<kind>/<name>``) as ZooKeeper has it now ({} when
    there is none)."""
    from kazoo.exceptions import NoNodeError

    try:
        data, _ = zk.get(path)
    except NoNodeError:
        return {}
    return decode_entity_config(data)


def encode_config_change(entity_path: str) -> bytes:
    """A ``/config/changes/config_change_<seq>`` notification (version 2: ``topics/<t>``,
    ``users/<sanitized user>``)."""
    return _dumps({"version": 2, "entity_path": entity_path})


def decode_config_change(data: bytes | None) -> str | None:
    """The entity path of a notification, None for one we cannot read."""
    try:
        return str(json.loads(data)["entity_path"]) if data else None
    except (ValueError, KeyError, TypeError):
        return None


@dataclass(frozen=True)
class PartitionState:
    """``/brokers/topics/<t>/partitions/<p>/state`` plus the znode version it was read at."""

    leader: int
    leader_epoch: int
    isr: list[int]
    controller_epoch: int
    zk_version: int = -1
    replicas: list[int] = field(default_factory=list)  # from the topic assignment

    def encode(self) -> bytes:
        return _dumps(
            {
                "version": 1,
                "leader": self.leader,
                "leader_epoch": self.leader_epoch,
                "isr": self.isr,
                "controller_epoch": self.controller_epoch,
            }
        )

    @classmethod
    def decode(cls, data: bytes, zk_version: int, replicas: list[int]) -> PartitionState:
        doc = json.loads(data)
        return cls(
            int(doc["leader"]),
            int(doc["leader_epoch"]),
            [int(b) for b in doc["isr"]],
            int(doc["controller_epoch"]),
            zk_version,
            list(replicas),
        )


def encode_controller(broker_id: int) -> bytes:
    return _dumps(
        {
            "version": 2,
            "brokerid": broker_id,
            "timestamp": str(int(time.time() * 1000)),
            "kraftControllerEpoch": -1,
        }
    )


def decode_controller(data: bytes | None) -> int:
    if not data:
        return -1
    try:
        return int(json.loads(data)["brokerid"])
    except (ValueError, KeyError):
        return -1


def encode_producer_id_block(broker_id: int, start: int, end: int) -> bytes:
    """``/latest_producer_id_block`` (Kafka's ``ProducerIdBlockZNode``): the last block handed
    out, ``block_end`` inclusive, both as strings."""
    return _dumps(
        {"version": 1, "broker": broker_id, "block_start": str(start), "block_end": str(end - 1)}
    )


def decode_producer_id_block_end(data: bytes | None) -> int:
    """The first id after the last block handed out (0 when none was)."""
    if not data:
        return 0
    return int(json.loads(data)["block_end"]) + 1


def create_partition_state(zk: Any, topic: str, partition: int, data: bytes) -> bool:
    """Create the partition's state znode, and the ``partitions`` and ``<p>`` znodes above it
    where missing, but never the topic's own znode: False (nothing created) when that is
    gone, as when the topic was deleted after the caller read its assignment (``makepath``
    would bring back a ``/brokers/topics/<t>`` with a partition state under it). Raises
    kazoo's NodeExistsError when the state exists."""
    from kazoo.exceptions import NodeExistsError, NoNodeError

    parents = partitions_path(topic)
    for path in (parents, f"{parents}/{partition}"):
        try:
            zk.create(path, b"")
        except NodeExistsError:
            pass
        except NoNodeError:
            return False
    try:
        zk.create(state_path(topic, partition), data)
    except NoNodeError:
        return False  # deleted between the parents and the state
    return True


def update_znode(
    zk: Any, path: str, change: Callable[[bytes | None], bytes | None]
) -> bytes | None:
    """Replace ``path``'s data by ``change(data)`` (None in: no znode; None out: delete it),
    conditional on the version read, again and again until no other writer got in between
    (so concurrent changes through two brokers both count). Returns what was written."""
    from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

    while True:
        try:
            data, stat = zk.get(path)
            version = stat.version
        except NoNodeError:
            data, version = None, None
        wanted = change(data)
        try:
            if version is None:
                if wanted is not None:
                    zk.create(path, wanted, makepath=True)
            elif wanted is None:
                zk.delete(path, version=version)
            else:
                zk.set(path, wanted, version=version)
            return wanted
        except (BadVersionError, NodeExistsError, NoNodeError):
            continue


def update_entity_config(
    zk: Any, path: str, keep: Callable[[str], bool], entries: dict[str, str]
) -> bytes | None:
    """Change the entity config in ``path`` with ``update_znode``: the keys ``keep`` accepts
    stay, then ``entries`` are set (how writers of different keys of one znode, a user's SCRAM
    credentials and its quotas, leave each other's alone). Returns what was written."""

    def change(data: bytes | None) -> bytes:
        config = {key: value for key, value in decode_entity_config(data).items() if keep(key)}
        config.update(entries)
        return encode_entity_config(config)

    return update_znode(zk, path, change)
