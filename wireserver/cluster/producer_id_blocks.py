"""Producer id blocks reserved in ZooKeeper (Kafka's ``ZkProducerIdManager``), so that no two
brokers of a cluster hand out the same producer id: transaction coordinators move between
brokers, and a producer id must name one producer on every partition it writes to.

``/latest_producer_id_block`` holds the last block handed to any broker, as Kafka writes it:
``{"version": 1, "broker": <id>, "block_start": "<first>", "block_end": "<last>"}`` (the end is
inclusive; the numbers are strings). A broker takes the next block with a conditional write and
reads again on a version conflict. The first block starts past the broker's single-node file
(``wireserver.producer_ids``), so that ids handed out before the broker joined a cluster are not
handed out again by it.
"""

from __future__ import annotations

import json
from typing import Any

from wireserver.producer_ids import BLOCK_SIZE, MAX_PRODUCER_ID, ProducerIdManager, \
    ProducerIdsExhausted

LATEST_PRODUCER_ID_BLOCK = "/latest_producer_id_block"


class ZkProducerIdManager(ProducerIdManager):
    def __init__(self, zk: Any, broker_id: int, floor: int = 0, block_size: int = BLOCK_SIZE):
        # Not ProducerIdManager.__init__: the durable record is the znode, not the file.
        self.zk = zk
        self.broker_id = broker_id
        self.block_size = block_size
        self._durable_next = floor
        self._next = 0
        self._block_end = 0

    def _reserve_block(self) -> None:
        from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

        while True:
            try:
                data, stat = self.zk.get(LATEST_PRODUCER_ID_BLOCK)
            except NoNodeError:
                data, stat = None, None
            start = self._durable_next
            if data:
                start = max(start, int(json.loads(data)["block_end"]) + 1)
            if start > MAX_PRODUCER_ID:
                raise ProducerIdsExhausted("producer ids are exhausted")
            end = start + self.block_size
            doc = json.dumps({"version": 1, "broker": self.broker_id,
                              "block_start": str(start), "block_end": str(end - 1)}).encode()
            try:
                if stat is None:
                    self.zk.create(LATEST_PRODUCER_ID_BLOCK, doc, makepath=True)
                else:
                    self.zk.set(LATEST_PRODUCER_ID_BLOCK, doc, version=stat.version)
            except (BadVersionError, NodeExistsError):
                continue  # another broker took a block meanwhile: read again
            self._durable_next = end
            self._next, self._block_end = start, end
            return
