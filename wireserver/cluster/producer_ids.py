"""Producer ids unique across the cluster: blocks reserved in ZooKeeper.

Every broker answers InitProducerId, so two brokers handing out ids from their own files would
give two producers the same id, and their sequence numbers would collide on the partitions both
write to. As Kafka's ``ZkProducerIdManager`` did, a broker takes its next block of
``BLOCK_SIZE`` ids by a conditional write of ``/latest_producer_id_block`` (the block after the
one recorded there); a version conflict means another broker took that block, and it tries the
next. Ids still come one at a time from the block in memory; a restart wastes the rest of it.
"""

from __future__ import annotations

from typing import Any

from wireserver.cluster import zkdata as zd
from wireserver.producer_ids import (
    BLOCK_SIZE,
    MAX_PRODUCER_ID,
    ProducerIdManager,
    ProducerIdsExhausted,
)


class ZkProducerIdManager(ProducerIdManager):
    def __init__(self, zk: Any, broker_id: int):
        # No file: the block state lives in ZooKeeper.
        self.zk = zk
        self.broker_id = broker_id
        self.block_size = BLOCK_SIZE
        self._durable_next = 0
        self._next = 0
        self._block_end = 0

    def _reserve_block(self) -> None:
        from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

        while True:
            try:
                data, stat = self.zk.get(zd.PRODUCER_ID_BLOCK)
            except NoNodeError:
                data, stat = None, None
            start = zd.decode_producer_id_block_end(data)
            if start > MAX_PRODUCER_ID:
                raise ProducerIdsExhausted("producer ids are exhausted")
            end = start + self.block_size
            block = zd.encode_producer_id_block(self.broker_id, start, end)
            try:
                if stat is None:
                    self.zk.create(zd.PRODUCER_ID_BLOCK, block)
                else:
                    self.zk.set(zd.PRODUCER_ID_BLOCK, block, version=stat.version)
            except (BadVersionError, NodeExistsError):
                continue  # another broker took this block
            self._durable_next = end
            self._next, self._block_end = start, end
            return
