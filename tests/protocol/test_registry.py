"""The served table names its message classes by module; they load on first use and must
match the key and versions the table serves."""

import pytest

from wireserver.protocol.registry import ApiRegistry, DuplicateApi
from wireserver.protocol.served import SERVED


@pytest.mark.parametrize("spec", list(SERVED), ids=lambda spec: spec.name)
def test_every_served_api_loads_classes_for_its_key_and_versions(spec):
    for cls in (spec.request_class, spec.response_class):
        assert cls.API_KEY == spec.key
        assert cls.max_version >= spec.max_version
    assert spec.request_class.name == spec.name + "Request"


def test_a_key_registered_twice_is_refused():
    registry = ApiRegistry()
    registry.register(3, "Metadata", "kafka.protocol.metadata.metadata", 0, 13)
    with pytest.raises(DuplicateApi):
        registry.register(3, "Metadata", "kafka.protocol.metadata.metadata", 0, 12)


def test_classes_of_another_key_are_refused_when_loaded():
    registry = ApiRegistry()
    spec = registry.register(4, "Metadata", "kafka.protocol.metadata.metadata", 0, 13)
    with pytest.raises(ValueError, match="API key 3"):
        _ = spec.request_class


def test_versions_beyond_the_message_class_are_refused_when_loaded():
    registry = ApiRegistry()
    spec = registry.register(3, "Metadata", "kafka.protocol.metadata.metadata", 0, 99)
    with pytest.raises(ValueError, match="outside what the message class knows"):
        _ = spec.request_class
