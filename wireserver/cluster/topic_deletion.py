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
from typing import TYPE_CHECKING

from wireserver.cluster import zkdata as zd

if TYPE_CHECKING:
    from wireserver.cluster.controller import Controller

log = logging.getLogger(__name__)


class TopicDeletion:
    def __init__(self, controller: Controller):
        self.controller = controller

    def start(self) -> None:
        node = self.controller.node

        def on_children(children: list[str]) -> bool | None:
            if not self.controller.active or node.stopped:
                return False  # a resigned controller stops watching
            node._from_zk(self.delete_topics)(children)
            return None

        node.zk.ChildrenWatch(zd.DELETE_TOPICS, on_children)

    def delete_topics(self, names: list[str]) -> None:
        for name in sorted(names):
            if not self.controller.active:
                return
            self.delete_topic(name)

    def delete_topic(self, name: str) -> None:
        from kazoo.exceptions import NoNodeError

        zk = self.controller.node.zk
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
