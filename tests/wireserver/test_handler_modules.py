"""Handler modules are found by API name and imported on first use; every served API has one."""

import pytest

from wireserver import apis
from wireserver.protocol.registry import ApiRegistry
from wireserver.protocol.served import SERVED


def test_every_served_api_has_a_handler_module_that_registers_its_key():
    apis.load_all(SERVED)
    assert set(apis.HANDLERS) == {spec.key for spec in SERVED}
    for spec in SERVED:
        handler = apis.handler_for(spec)
        assert handler.__module__ == f"wireserver.apis.{apis.module_name(spec.name)}"


def test_the_served_table_and_the_handler_modules_agree():
    apis.check_handlers(SERVED)
    assert apis.handler_modules() == {apis.module_name(spec.name) for spec in SERVED}


def test_module_names_follow_the_api_names():
    assert apis.module_name("Produce") == "produce"
    assert apis.module_name("DescribeUserScramCredentials") == "describe_user_scram_credentials"
    assert apis.module_name("OffsetForLeaderEpoch") == "offset_for_leader_epoch"


def test_a_served_api_without_a_module_stops_the_server_at_start():
    registry = ApiRegistry()
    for spec in SERVED:
        registry.register(spec.key, spec.name, spec.module, spec.min_version, spec.max_version)
    registry.register(67, "AllocateProducerIds", "kafka.protocol.consumer.fetch", 0, 0)
    with pytest.raises(RuntimeError, match="no handler module for \\['allocate_producer_ids'\\]"):
        apis.check_handlers(registry)


def test_a_handler_module_without_a_served_api_stops_the_server_at_start():
    registry = ApiRegistry()
    for spec in SERVED:
        if spec.name != "ListGroups":
            registry.register(spec.key, spec.name, spec.module, spec.min_version, spec.max_version)
    with pytest.raises(RuntimeError, match="but not served: \\['list_groups'\\]"):
        apis.check_handlers(registry)
