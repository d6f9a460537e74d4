"""The controller's side of DeleteTopics (Kafka's ZooKeeper-era ``TopicDeletionManager``,
reduced to what brokers without controller RPCs need).

A broker receiving DeleteTopics creates ``/admin/delete_topics/<t>``. The controller watches
those children and, for each, deletes the topic's znodes in Kafka's order: the assignment with
its partition states (``/brokers/topics/<t>``, recursively), the config (``/config/topics/<t>``)
and finally the deletion request itself. Every broker sees the assignment disappear and drops
its replicas and logs (``ClusterNode``); a broker that is down meanwhile drops them when it
starts again and finds the topic gone (or re-created under another topic id).

Deliberate difference: Kafka waits until every replica acknowledged its StopReplica (a dead
broker holds the deletion); here deletion completes at once and absent brokers catch up on
start.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from wireserver.cluster import zkdata as zd

log = logging.getLogger(__name__)


class DeletionHost(Protocol):
    """What the deletion uses of the broker's cluster membership (``ClusterNode``): its
    ZooKeeper client, whether it stopped, and its way of running a watch on the reactor."""

    zk: Any
    stopped: bool

    def _from_zk(self, func: Callable[..., Any]) -> Callable[..., None]: ...


class TopicDeletion:
    def __init__(self, node: DeletionHost, active: Callable[[], bool]):
        """``active``: whether the controller that runs the deletion still is the controller
        (a resigned one deletes nothing more)."""
        self.node = node
        self.active = active

    def start(self) -> None:
        node = self.node

        def on_children(children: list[str]) -> bool | None:
            if not self.active() or node.stopped:
                return False  # a resigned controller stops watching
            node._from_zk(self.delete_topics)(children)
            return None

        node.zk.ChildrenWatch(zd.DELETE_TOPICS, on_children)

    def delete_topics(self, names: list[str]) -> None:
        for name in sorted(names):
            if not self.active():
                return
            self.delete_topic(name)

    def delete_topic(self, name: str) -> None:
        from kazoo.exceptions import NoNodeError

        zk = self.node.zk
        log.info("deleting topic %s", name)
        for path, recursive in (
            (zd.topic_path(name), True),
            (zd.topic_config_path(name), False),
            (zd.delete_topic_path(name), False),
        ):
            try:
                zk.delete(path, recursive=recursive)
            except NoNodeError:
                pass
