"""DescribeConfigs (key 32), v1-4.

Kafka's ``ConfigHelper.describeConfigs``, per resource:

- TOPIC (2): every topic-level key (or those in ``configuration_keys``; null or empty = all)
  with its effective value, source (DYNAMIC_TOPIC_CONFIG for an override, else the first broker
  synonym's, else DEFAULT_CONFIG) and, with ``include_synonyms``, the override followed by the
  broker synonyms. An illegal name → INVALID_TOPIC_EXCEPTION; unknown → UNKNOWN_TOPIC_OR_PARTITION.
- BROKER (4) named by our node id: every broker key, read-only unless it can change at runtime,
  with the source of its value in Kafka's precedence (DYNAMIC_BROKER_CONFIG, then
  DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG; the dynamic layers as
  stored, ``wireserver.dynamic_configs``).
  An empty name is the cluster-wide default resource: only the keys set as dynamic cluster
  defaults. Any other id or a non-integer → INVALID_REQUEST with Kafka's message.
- BROKER_LOGGER (8) named by our node id: our Python loggers under log4j level names (source
  DYNAMIC_BROKER_LOGGER_CONFIG); an empty name or another id → INVALID_REQUEST.
- GROUP (32): every group key (``wireserver.groups.configs``), existing group or not: the
  group's value (source GROUP_CONFIG) or its default (DEFAULT_CONFIG), with that one synonym.
  An empty name → INVALID_REQUEST "Group name must not be empty".
- Anything else (CLIENT_METRICS, ...) → INVALID_REQUEST "Unsupported resource type".

Sensitive values are null. v3+ adds the config type and, with ``include_documentation``, the
documentation. Authorization: DESCRIBE_CONFIGS on the topic (TOPIC_AUTHORIZATION_FAILED) or, for
BROKER and BROKER_LOGGER resources, on the cluster (CLUSTER_AUTHORIZATION_FAILED), or on the
group (GROUP_AUTHORIZATION_FAILED), with Kafka's default message and no configs.
"""

from __future__ import annotations

from wireserver.admin import (
    RESOURCE_BROKER,
    RESOURCE_BROKER_LOGGER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    AdminError,
    check_broker_resource,
    check_group_resource,
    group_config_rows,
    logger_levels,
    topic_rows,
    unsupported_resource,
)
from wireserver.apis import HandlerResult, handles
from wireserver.config import (
    CONFIG_SOURCE_IDS,
    DEFAULT_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    BrokerConfig,
)
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks
from wireserver.topics import TopicError, check_name

API_KEY = 32
LOGGER_SOURCE = CONFIG_SOURCE_IDS["DYNAMIC_BROKER_LOGGER_CONFIG"]


class Describer:
    def __init__(self, ctx):
        self.ctx = ctx
        self.services = ctx.services
        self.version = ctx.version
        body = ctx.body
        self.synonyms = bool(body.include_synonyms)
        self.documentation = bool(body.include_documentation) if self.version >= 3 else False
        result_class = ctx.request.spec.response_class.DescribeConfigsResult
        self.result_class = result_class
        self.entry_class = result_class.DescribeConfigsResourceResult
        self.synonym_class = self.entry_class.DescribeConfigsSynonym

    def entry(self, row, synonyms=None):
        synonyms = row.synonyms if synonyms is None else synonyms
        return self.entry_class(
            name=row.name,
            value=row.value,
            read_only=row.read_only,
            config_source=row.source_id,
            is_sensitive=row.sensitive,
            synonyms=[
                self.synonym_class(name=s.name, value=s.value, source=s.source_id) for s in synonyms
            ]
            if self.synonyms
            else [],
            config_type=row.type_id,
            documentation=row.doc if self.documentation else None,
        )

    def describe(self, resource) -> list:
        names = resource.configuration_keys or None
        kind = resource.resource_type
        if kind == RESOURCE_TOPIC:
            return self.topic(resource.resource_name, names)
        if kind == RESOURCE_BROKER:
            return self.broker_configs(resource.resource_name, names)
        if kind == RESOURCE_BROKER_LOGGER:
            return self.loggers(resource.resource_name, names)
        if kind == RESOURCE_GROUP:
            check_group_resource(resource.resource_name, describing=True)
            return [
                self.entry(row)
                for row in group_config_rows(self.services, resource.resource_name, names)
            ]
        raise unsupported_resource(kind, f"Unsupported resource type: {kind}")

    def topic(self, name, names) -> list:
        try:
            check_name(name)
        except TopicError as exc:
            raise AdminError(exc.code, exc.message) from None
        info = self.services.logs.topics.get(name)
        if info is None:
            raise AdminError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
        return [self.entry(row) for row in topic_rows(self.services, info, names)]

    def broker_configs(self, name, names) -> list:
        config: BrokerConfig = self.services.config
        if not check_broker_resource(self.services, name, allow_default=True):
            return [self.entry(row) for row in config.items(names)]
        defaults = config.dynamic_values(cluster_default=True)
        wanted = [n for n in defaults if names is None or n in names]
        entries = []
        for row in config.items(wanted):
            synonyms = [s for s in row.synonyms if s.source == DYNAMIC_DEFAULT_BROKER_CONFIG]
            value = None if row.sensitive else defaults[row.name]
            source = CONFIG_SOURCE_IDS[synonyms[0].source if synonyms else DEFAULT_CONFIG]
            entry = self.entry(row, synonyms)
            entry.value, entry.config_source = value, source
            entries.append(entry)
        return entries

    def loggers(self, name, names) -> list:
        check_broker_resource(self.services, name, allow_default=False)
        return [
            self.entry_class(
                name=logger,
                value=level,
                read_only=False,
                config_source=LOGGER_SOURCE,
                is_sensitive=False,
                synonyms=[],
                config_type=0,
                documentation=None,
            )
            for logger, level in logger_levels().items()
            if names is None or logger in names
        ]


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    describer = Describer(ctx)
    results = []
    for resource in ctx.body.resources:
        try:
            denied = checks.describe_configs(ctx, resource.resource_type, resource.resource_name)
            if denied:
                raise AdminError(denied, checks.message(denied))
            configs = describer.describe(resource)
            code, message = ErrorCode.NONE, None
        except AdminError as exc:
            configs, code, message = [], exc.code, exc.message
        results.append(
            describer.result_class(
                error_code=code,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
                configs=configs,
            )
        )
    return ctx.response(throttle_time_ms=0, results=results)
