"""kcat (librdkafka's command-line client) produces keyed records with each codec and reads
them back to the end of every partition."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.integration.conftest import PARTITIONS, require

KCAT = shutil.which("kcat") or shutil.which("kafkacat")


def kcat(*args: str, stdin: str | None = None, timeout: float = 30) -> str:
    require(KCAT, "kcat is not installed (apt-get install kcat)")
    result = subprocess.run(
        [KCAT, *args], input=stdin, capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_kcat_produce_consume(broker, topic, codec):
    lines = [f"key-{i}\tvalue {i} {codec}" for i in range(40)]
    kcat(
        "-b",
        broker.bootstrap_servers,
        "-P",
        "-t",
        topic,
        "-K",
        "\t",
        "-z",
        codec,
        "-X",
        "acks=all",
        stdin="\n".join(lines) + "\n",
    )
    out = kcat(
        "-b",
        broker.bootstrap_servers,
        "-C",
        "-t",
        topic,
        "-o",
        "beginning",
        "-e",
        "-q",
        "-f",
        "%p\t%o\t%k\t%s\n",
    )
    rows = [line.split("\t") for line in out.splitlines() if line]
    assert sorted((k, s) for _, _, k, s in rows) == sorted(
        tuple(line.split("\t")) for line in lines
    )
    # The default partitioner hashes the key: each partition's records keep send order.
    sent_order = {line.split("\t")[0]: i for i, line in enumerate(lines)}
    for partition in range(PARTITIONS):
        mine = sorted((int(o), k) for p, o, k, _ in rows if int(p) == partition)
        assert [o for o, _ in mine] == list(range(len(mine)))
        assert [sent_order[k] for _, k in mine] == sorted(sent_order[k] for _, k in mine)


def test_kcat_metadata(broker, topic):
    kcat("-b", broker.bootstrap_servers, "-P", "-t", topic, stdin="hello\n")
    out = kcat("-b", broker.bootstrap_servers, "-L", "-t", topic)
    assert f'topic "{topic}" with {PARTITIONS} partitions' in out
