"""The dynamic broker config file read at start: this broker's layer and the cluster default
are applied, another broker's entry is not, and keys that would be refused by AlterConfigs
(written by hand or by another release) are left out with a warning, the broker starting
anyway, as Kafka's ``DynamicBrokerConfig`` does with invalid stored configs."""

from __future__ import annotations

import json
import logging

from wireserver.config import DEFAULT_CONFIG, BrokerConfig
from wireserver.dynamic_configs import FILE_NAME, DynamicBrokerConfigs


def test_stored_layers_are_applied_and_invalid_keys_ignored(tmp_path, caplog):
    stored = {
        "<default>": {"log.retention.ms": "60000", "cordoned.log.dirs": "/x"},  # per broker only
        "1": {
            "message.max.bytes": "5000",
            "listeners": "PLAINTEXT://:1",  # needs a restart
            "log.retention.bytes": "lots",  # not a long
        },
        "2": {"log.segment.bytes": "2000000"},  # another broker's
    }
    (tmp_path / FILE_NAME).write_text(json.dumps({"version": 1, "brokers": stored}))
    config = BrokerConfig({"node.id": "1", "log.dirs": str(tmp_path)})

    with caplog.at_level(logging.WARNING, logger="wireserver.dynamic_configs"):
        DynamicBrokerConfigs(config, 1, str(tmp_path)).load()

    assert config.dynamic_values(cluster_default=True) == {"log.retention.ms": "60000"}
    assert config.dynamic_values() == {"message.max.bytes": "5000"}
    assert config["message.max.bytes"] == 5000
    assert config.source("log.segment.bytes") == DEFAULT_CONFIG
    ignored = sorted(record.args[0] for record in caplog.records)
    assert ignored == ["cordoned.log.dirs", "listeners", "log.retention.bytes"]
