"""Share-group requests (ShareGroupHeartbeat, ShareFetch, ShareAcknowledge) built for one group,
as the ACL-coverage tests and the cluster's feature tests send them."""

from __future__ import annotations

from wireserver.protocol.messages_share import (
    ShareAcknowledgeRequest,
    ShareFetchRequest,
    ShareGroupHeartbeatRequest,
)


def share_group_heartbeat(group):
    return ShareGroupHeartbeatRequest(
        version=1,
        group_id=group,
        member_id="m1",
        member_epoch=0,
        rack_id=None,
        subscribed_topic_names=["t"],
    )


def share_fetch(group):
    return ShareFetchRequest(
        version=1,
        group_id=group,
        member_id="m1",
        share_session_epoch=0,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1024,
        max_records=10,
        batch_size=10,
        topics=[],
        forgotten_topics_data=[],
    )


def share_acknowledge(group):
    return ShareAcknowledgeRequest(
        version=1, group_id=group, member_id="m1", share_session_epoch=-1, topics=[]
    )
