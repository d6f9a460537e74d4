"""InitProducerId on a real broker, and the producer id allocator on its own."""

from __future__ import annotations

import json
import os

import pytest
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse

from tests.idempotence.conftest import RawClient
from wireserver.producer_ids import BLOCK_SIZE, FILE_NAME, ProducerIdManager
from wireserver.protocol.errors import ErrorCode


def init(client, version=4, transactional_id=None, timeout=60000, producer_id=-1, epoch=-1):
    fields = dict(transactional_id=transactional_id, transaction_timeout_ms=timeout)
    if version >= 3:
        fields.update(producer_id=producer_id, producer_epoch=epoch)
    r = client.send(InitProducerIdRequest, InitProducerIdResponse, version, **fields)
    return ErrorCode(r.error_code).name, r.producer_id, r.producer_epoch


@pytest.fixture
def raw(broker):
    client = RawClient(broker.port)
    yield client
    client.close()


@pytest.mark.parametrize("version", range(6))
def test_new_idempotent_producer(raw, version):
    error, pid, epoch = init(raw, version)
    assert (error, epoch) == ("NONE", 0) and pid >= 0
    assert init(raw, version)[1] == pid + 1


def test_ids_unique_across_restarts(broker):
    seen = set()
    for _ in range(3):
        client = RawClient(broker.port)
        seen.update(init(client)[1] for _ in range(5))
        client.close()
        broker.stop()
        broker.start()
    assert len(seen) == 15


def test_kip360_recovery_gets_a_new_id(raw):
    """An idempotent producer recovering (KIP-360) sends its id and epoch; like Kafka we answer
    with a new producer id and epoch 0, never the old id again."""
    _, pid, _ = init(raw)
    error, new_pid, epoch = init(raw, 3, producer_id=pid, epoch=0)
    assert (error, epoch) == ("NONE", 0) and new_pid != pid
    error, newer_pid, epoch = init(raw, 5, producer_id=new_pid, epoch=7)
    assert (error, epoch) == ("NONE", 0) and newer_pid not in (pid, new_pid)


def test_id_and_epoch_must_come_together(raw):
    assert init(raw, 3, producer_id=5, epoch=-1)[0] == "INVALID_REQUEST"
    assert init(raw, 3, producer_id=-1, epoch=2)[0] == "INVALID_REQUEST"


def test_transactional_ids_until_transactions_exist(raw):
    assert init(raw, 4, transactional_id="tx")[0] == "COORDINATOR_NOT_AVAILABLE"
    assert init(raw, 4, transactional_id="")[0] == "INVALID_REQUEST"
    assert init(raw, 4, transactional_id="tx", timeout=0)[0] == "INVALID_TRANSACTION_TIMEOUT"
    assert init(raw, 4, transactional_id="tx", timeout=900001)[0] == "INVALID_TRANSACTION_TIMEOUT"


def test_allocator_persists_block_before_use(tmp_path):
    ids = ProducerIdManager(str(tmp_path))
    assert not os.path.exists(tmp_path / FILE_NAME)
    assert [ids.generate() for _ in range(3)] == [0, 1, 2]
    stored = json.loads((tmp_path / FILE_NAME).read_text())
    assert stored == {"version": 1, "next_block_start": BLOCK_SIZE}
    again = ProducerIdManager(str(tmp_path))  # a restart skips the rest of the block
    assert again.generate() == BLOCK_SIZE
    assert again.next_block_start == 2 * BLOCK_SIZE


def test_allocator_crosses_blocks(tmp_path):
    ids = ProducerIdManager(str(tmp_path), block_size=2)
    assert [ids.generate() for _ in range(5)] == [0, 1, 2, 3, 4]
    assert json.loads((tmp_path / FILE_NAME).read_text())["next_block_start"] == 6


def test_damaged_allocator_file_is_an_error(tmp_path):
    (tmp_path / FILE_NAME).write_text("{not json")
    with pytest.raises(ValueError):
        ProducerIdManager(str(tmp_path))
