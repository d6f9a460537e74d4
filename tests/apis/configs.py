"""DescribeConfigs and (Incremental)AlterConfigs as the config tests send them: through
confluent-kafka's admin client, and hand-made on a raw connection where a test needs a field
the client does not expose or a resource type it does not know (groups, client metrics)."""

from __future__ import annotations

from confluent_kafka.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
)
from kafka.protocol.admin.configs import (
    DescribeConfigsRequest,
    DescribeConfigsResponse,
)

from tests.apis.conftest import wait


def describe(cadmin, kind, name, **kwargs):
    resource = ConfigResource(kind, name)
    return wait(cadmin.describe_configs([resource], **kwargs))[resource]


def alter(cadmin, kind, name, ops, incremental=True, validate_only=False):
    resource = (
        ConfigResource(kind, name, incremental_configs=ops)
        if incremental
        else ConfigResource(kind, name, set_config=ops)
    )
    call = cadmin.incremental_alter_configs if incremental else cadmin.alter_configs
    return wait(call([resource], validate_only=validate_only))[resource]


def op(name, value, kind=AlterConfigOpType.SET):
    return ConfigEntry(name, value, incremental_operation=kind)


def raw_describe(raw, name, expect_error=0, kind=4):
    request = DescribeConfigsRequest
    response = raw.send(
        request,
        DescribeConfigsResponse,
        4,
        include_synonyms=True,
        include_documentation=True,
        resources=[
            request.DescribeConfigsResource(
                resource_type=kind, resource_name=name, configuration_keys=None
            )
        ],
    )
    assert response.results[0].error_code == expect_error
    return response.results[0].configs


GROUP = 32


def raw_group_alter(raw, name, key, value, operation=0, kind=GROUP):
    """IncrementalAlterConfigs of one key of a group (or a resource of type ``kind``),
    operation 0 SET or 1 DELETE: (error code, error message)."""
    from kafka.protocol.admin.configs import (
        IncrementalAlterConfigsRequest,
        IncrementalAlterConfigsResponse,
    )

    resource = IncrementalAlterConfigsRequest.AlterConfigsResource
    response = raw.send(
        IncrementalAlterConfigsRequest,
        IncrementalAlterConfigsResponse,
        1,
        validate_only=False,
        resources=[
            resource(
                resource_type=kind,
                resource_name=name,
                configs=[
                    resource.AlterableConfig(name=key, config_operation=operation, value=value)
                ],
            )
        ],
    )
    return response.responses[0].error_code, response.responses[0].error_message
