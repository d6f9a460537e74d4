"""Error responses for any request, built without handling the request (the ``error`` control).

A request the ``error`` control picks is never given to its handler: nothing is appended,
committed, joined or created, so a client that retries after the injected error finds the broker
as it was and produces no duplicate. ``error_response`` builds the answer from the message
schemas alone (kafka-python's classes and the project's own in ``protocol/messages_*.py``):

- every per-item error field carries the code: the response arrays that hold an error field
  are paired with the request arrays they answer (by name, or through ``_ANSWERS`` where Kafka
  named them differently) and get one entry per request item, with its key fields (topic name or
  id, partition, group id, coordinator key, transactional id, resource, member) copied;
- the top-level ``error_code``, where the version has one, carries it too, and every
  ``error_message`` the message given (or null);
- every other field holds what a client reads as "no data": offsets, epochs, ids, ports and
  timestamps -1 unless the schema gives a default, nullable strings and structs null, arrays
  empty, tagged fields left out.

Fetch v7+ has a top-level ``error_code`` too, and it carries the code like every other one, as
in Kafka's own answer to a Fetch that failed as a whole (``FetchRequest.getErrorResponse``):
Java's consumer then takes the whole fetch as failed (it closes its fetch session and reads no
partition error), so an injected NOT_LEADER_OR_FOLLOWER makes it fetch again rather than
refresh its metadata.

A request that names no items (Metadata or OffsetFetch of every topic, DescribeUserScram-
Credentials of every user) gets the top-level error only, where its version has one.

Exceptions the schemas can't tell (``_ANSWERS`` aside):

- Metadata lists ``brokers`` the caller passes: Java's ``NetworkClient``, kafka-python and
  aiokafka ignore a Metadata response without brokers ("Ignoring empty metadata response",
  ``MetadataEmptyBrokerList``), so they would never see the error, and librdkafka 2.13 forgets
  every broker it knew (confluentinc/librdkafka#5301). Requested topics each carry the error
  (no partitions, ``cluster_id`` null, ``controller_id`` -1). An all-topics request is answered
  with no topics: the client takes it as a cluster with no topics until its next Metadata (a
  pattern subscriber matches nothing and gives up its partitions meanwhile; Admin
  ``listTopics`` sees none); v13+ also has the top-level ``error_code``, which clients act on
  only for REBOOTSTRAP_REQUIRED.
- DescribeLogDirs answers per log directory, which the request does not name: one result for no
  directory (``log_dir`` "") carries the error, beside the top-level code of v3+.
- AlterReplicaLogDirs names partitions per log directory and is answered per topic: every
  partition of every directory carries the error, under its topic.
- ApiVersions is answered at v0 whatever the request's version: clients read an ApiVersions
  response with an error as v0 (KIP-511; kafka-python reads nothing else, Java falls back to
  it), as Kafka answers UNSUPPORTED_VERSION. So the caller encodes every error response at
  ``response.version`` (the request's version for every other API).

Produce with ``acks=0`` gets no response at all: the server writes nothing for it, so the caller
closes the connection instead, as Kafka does when such a produce fails (the client then
refreshes its metadata).

Refused: no API. ``REFUSED`` (raising ``ErrorInjectionUnsupported``) is where an API served
later would go if its answer could not be shaped from its schemas.

``request_targets`` reads what a request names (topics and partitions, group ids, coordinator
keys, transactional ids) so the control's ``topic``/``partition``/``group`` filters can match.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

#: Response array → the request array(s) it answers, where Kafka gave them different names; and
#: response key field → request key field where those differ. Per API name.
_ANSWERS: dict[str, dict[str, tuple[str, ...]]] = {
    "Produce": {"responses": ("topic_data",), "partition_responses": ("partition_data",)},
    "Fetch": {"responses": ("topics",), "partition_index": ("partition",)},
    "OffsetFetch": {"partitions": ("partition_indexes",)},
    "FindCoordinator": {"coordinators": ("coordinator_keys",)},
    "DeleteTopics": {"responses": ("topics", "topic_names")},
    "AddPartitionsToTxn": {
        "results_by_transaction": ("transactions",),
        "topic_results": ("topics",),
        "results_by_partition": ("partitions",),
        "results_by_topic_v3_and_below": ("v3_and_below_topics",),
    },
    "WriteTxnMarkers": {"partitions": ("partition_indexes",)},
    "CreateAcls": {"results": ("creations",)},
    "DeleteAcls": {"filter_results": ("filters",)},
    "DescribeConfigs": {"results": ("resources",)},
    "AlterConfigs": {"responses": ("resources",)},
    "IncrementalAlterConfigs": {"responses": ("resources",)},
    "CreatePartitions": {"results": ("topics",)},
    "DeleteGroups": {"results": ("groups_names",)},
    "ElectLeaders": {
        "replica_election_results": ("topic_partitions",),
        "partition_result": ("partitions",),
    },
    "AlterPartitionReassignments": {"responses": ("topics",)},
    "DescribeProducers": {"partitions": ("partition_indexes",)},
    "DescribeTransactions": {"transaction_states": ("transactional_ids",)},
    "ConsumerGroupDescribe": {"groups": ("group_ids",)},
    "StreamsGroupDescribe": {"groups": ("group_ids",)},
    "ShareGroupDescribe": {"groups": ("group_ids",)},
    # the share coordinator's state RPCs (keys 83-87) answer their topics as "results"
    **{
        name: {"results": ("topics",)}
        for name in (
            "InitializeShareGroupState",
            "ReadShareGroupState",
            "WriteShareGroupState",
            "DeleteShareGroupState",
            "ReadShareGroupStateSummary",
        )
    },
    "DescribeUserScramCredentials": {"results": ("users",), "user": ("name",)},
    # one result per user, deletions first, then upsertions
    "AlterUserScramCredentials": {"results": ("deletions", "upsertions"), "user": ("name",)},
    "UpdateFeatures": {"results": ("feature_updates",)},
}

#: The fields that say which item an answer is for, copied from the request item it answers.
_KEY_FIELDS = frozenset(
    {
        "name",
        "topic",
        "topic_name",
        "topic_id",
        "index",
        "partition",
        "partition_index",
        "partition_id",
        "group_id",
        "key",
        "transactional_id",
        "resource_type",
        "resource_name",
        "member_id",
        "group_instance_id",
        "producer_id",
        "feature",
        "user",
    }
)

#: Integers that mean "none" at -1 (Kafka's INVALID_OFFSET, NO_PRODUCER_EPOCH, node -1, ...)
#: when the schema gives no default.
_NONE_AT_MINUS_ONE = ("offset", "watermark", "epoch", "_id", "port", "timestamp", "timestamp_ms")
_SIGNED_INTS = frozenset({"int16", "int32", "int64"})
#: Nullable fields left at their default besides arrays: records and bytes empty (Kafka's own
#: error responses carry MemoryRecords.EMPTY).
_KEPT_DEFAULTS = frozenset({"records", "bytes"})


class ErrorInjectionUnsupported(ValueError):
    """An API whose requests the ``error`` control cannot answer with an error."""

    def __init__(self, api: str, why: str):
        super().__init__(f"{api}: no error response can be injected: {why}")
        self.api = api
        self.why = why


#: API name → why its requests get no injected error response. Empty: every API served is
#: covered (tests/controls/test_error_responses.py checks every version).
REFUSED: dict[str, str] = {}


def _is_error_code(name: str) -> bool:
    return name == "error_code" or name.endswith("_error_code")


def _is_error_message(name: str) -> bool:
    return name == "error_message" or name.endswith("_error_message")


def _holds_error(field: Any, version: int) -> bool:
    """Whether a struct (array) field has an untagged error code in it, at any depth."""
    for child in field.untagged_fields(version):
        if _is_error_code(child.name):
            return True
        if (child.is_struct() or child.is_struct_array()) and _holds_error(child, version):
            return True
    return False


def _in_version(struct: Any, name: str, version: int) -> Any:
    field = struct.fields.get(name) if struct is not None else None
    return field if field is not None and field.for_version_q(version) else None


class _Builder:
    """Fills one response: the API's name, version, error code and message."""

    def __init__(self, api: str, version: int, code: int, message: str | None):
        self.api = api
        self.version = version
        self.code = code
        self.message = message
        self.renamed = _ANSWERS.get(api, {})

    def fields(
        self, struct: Any, request_struct: Any, request_item: Any, *, top: bool = False
    ) -> dict[str, Any]:
        """Values for the untagged fields of ``struct`` (a response struct) at this version.
        ``request_item`` is the request struct it answers (None where none does): an element of
        the request array paired with the response array ``struct`` is an element of, or the
        request body for the ``top`` level, whose fields are never echoed (a JoinGroup error
        carries no member id, an EndTxn error no producer id)."""
        values = {}
        for field in struct.untagged_fields(self.version):
            values[field.name] = self.value(field, request_struct, request_item, top)
        return values

    def value(self, field: Any, request_struct: Any, request_item: Any, top: bool) -> Any:
        name = field.name
        if _is_error_code(name):
            return self.code
        if _is_error_message(name):
            return self.message
        if field.is_struct_array():
            if not _holds_error(field, self.version):
                return field.default
            return self.answers(field, request_struct, request_item)
        if field.is_struct():
            if field.nullable_for_version_q(self.version):
                return None
            return field.data_class(version=self.version, **self.fields(field, None, None))
        if name in _KEY_FIELDS and request_item is not None and not top:
            source = _in_version(request_struct, self.renamed.get(name, (name,))[0], self.version)
            if source is not None:
                return getattr(request_item, source.name)
        return self.no_data(field)

    def no_data(self, field: Any) -> Any:
        """What a client reads as "none" for a field that is not an error or a key."""
        if (
            field.nullable_for_version_q(self.version)
            and not field.is_array()
            and field.type_str not in _KEPT_DEFAULTS
        ):
            return None
        default = field.default
        explicit = field._json.get("default") not in (None, "")
        if (
            not explicit
            and field.type_str in _SIGNED_INTS
            and field.name.endswith(_NONE_AT_MINUS_ONE)
        ):
            return -1
        return default

    def answers(self, field: Any, request_struct: Any, request_item: Any) -> list[Any]:
        """One element of response array ``field`` for each item of the request array(s) it
        answers; none where the request has no such array (or it is null: "all")."""
        if request_item is None:
            return []
        elements = []
        for source_name in self.renamed.get(field.name, (field.name,)):
            source = _in_version(request_struct, source_name, self.version)
            if source is None or not source.is_array():
                continue
            for item in getattr(request_item, source.name) or ():
                if source.is_struct_array():
                    values = self.fields(field, source, item)
                else:  # a list of plain keys (group ids, partition indexes, ...)
                    values = self.fields(field, None, None)
                    values[self._key_of(field)] = item
                elements.append(field.data_class(version=self.version, **values))
        return elements

    def _key_of(self, field: Any) -> str:
        """The key field of an answer to a plain list of keys: its first key field."""
        for child in field.untagged_fields(self.version):
            if child.name in _KEY_FIELDS:
                return child.name
        raise AssertionError(f"{self.api}: {field.name} answers a list but has no key field")


def error_response(
    request: Any,
    code: int,
    message: str | None = None,
    *,
    brokers: Iterable[tuple[int, str, int, str | None]] = (),
) -> Any:
    """A response to ``request`` (a ``protocol.messages.Request``) of its API and version in
    which every item the request names, and the top-level error where there is one, carries
    error ``code``; ``message`` goes into every ``error_message``. The request is not handled.

    ``brokers`` (node id, host, port, rack) are listed in a Metadata answer, and required there
    (see the module docstring); other APIs ignore them. Raises ValueError for code 0 or a
    Metadata request without brokers, ``ErrorInjectionUnsupported`` for a refused API."""
    spec = request.spec
    if code == 0:
        raise ValueError("an error response needs a non-zero error code")
    if spec.name in REFUSED:
        raise ErrorInjectionUnsupported(spec.name, REFUSED[spec.name])
    # Clients read an ApiVersions error as v0 (KIP-511; kafka-python reads nothing else), so it
    # is answered at v0 whatever the request's version, as Kafka answers UNSUPPORTED_VERSION.
    version = 0 if spec.name == "ApiVersions" else request.api_version
    builder = _Builder(spec.name, version, code, message)
    response_class = spec.response_class
    values = builder.fields(
        response_class._struct, spec.request_class._struct, request.body, top=True
    )
    if spec.name == "Metadata":
        listed = [
            response_class.MetadataResponseBroker(
                version=version, node_id=node_id, host=host, port=port, rack=rack
            )
            for node_id, host, port, rack in brokers
        ]
        if not listed:
            raise ValueError("a Metadata error response needs the brokers to list")
        values["brokers"] = listed
    elif spec.name == "DescribeLogDirs":
        result = response_class.fields["results"]
        values["results"] = [
            result.data_class(version=version, **builder.fields(result, None, None))
        ]
    elif spec.name == "AlterReplicaLogDirs":
        topic_class = response_class.AlterReplicaLogDirTopicResult
        partition_class = topic_class.AlterReplicaLogDirPartitionResult
        by_topic: dict[str, list[int]] = {}
        for entry in request.body.dirs:
            for topic in entry.topics:
                by_topic.setdefault(topic.name, []).extend(topic.partitions)
        values["results"] = [
            topic_class(
                version=version,
                topic_name=name,
                partitions=[
                    partition_class(version=version, partition_index=p, error_code=code)
                    for p in partitions
                ],
            )
            for name, partitions in by_topic.items()
        ]
    return response_class(version=version, **values)


@dataclass(frozen=True)
class Targets:
    """What a request names, for the ``error`` control's filters.

    ``topics``: topic name → the partitions named (None where the request names the topic but
    no partitions, as CreateTopics or Metadata do); topic ids are resolved to names, unknown ids
    left out. ``groups``: the group ids, coordinator keys and transactional ids named.
    ``all_topics``: the request asks about every topic (Metadata or OffsetFetch without a topic
    list, DescribeLogDirs of every partition, ...)."""

    topics: Mapping[str, frozenset[int] | None]
    groups: frozenset[str]
    all_topics: bool


#: Integer fields and integer lists that name partitions of the topic of their struct.
_PARTITION_FIELDS = frozenset({"partition", "partition_index", "index", "partition_id"})
_PARTITION_LISTS = frozenset({"partitions", "partition_indexes"})
#: Request fields that name groups without saying so in the schema (no ``entityType``).
_UNMARKED_GROUP_KEYS = {"FindCoordinator": frozenset({"key", "coordinator_keys"})}
#: Request arrays whose topics are not the request's targets: a Fetch only drops them from its
#: session (``forgotten_topics_data``).
_NOT_TARGETS = frozenset({"forgotten_topics_data"})
#: APIs whose null topic list means "unchanged since the last request", not "every topic".
_NULL_IS_UNCHANGED = frozenset({"ConsumerGroupHeartbeat"})
_ZERO_UUID = UUID(int=0)


def _names_topics(field: Any, version: int) -> bool:
    """Whether a request field (or what it contains) names topics."""
    if field._entity_type == "topicName" or field.name == "topic_id":
        return True
    if field.is_struct() or field.is_struct_array():
        return any(_names_topics(child, version) for child in field.fields.values())
    return False


class _TargetReader:
    def __init__(self, api: str, version: int, topic_name_of: Callable[[UUID], str | None]):
        self.api = api
        self.version = version
        self.topic_name_of = topic_name_of
        self.topics: dict[str, set[int] | None] = {}
        self.groups: set[str] = set()
        self.all_topics = False
        self.group_keys = _UNMARKED_GROUP_KEYS.get(api, frozenset())

    def add_topic(self, name: str, partitions: set[int] | None) -> None:
        if name in self.topics:
            known = self.topics[name]
            self.topics[name] = None if known is None or partitions is None else known | partitions
        else:
            self.topics[name] = partitions

    def read(self, struct: Any, item: Any) -> set[int] | None:
        """Record what ``item`` (of request struct ``struct``) names; return the partitions it
        names that belong to an enclosing topic (None if it names none)."""
        topic = None
        partitions: set[int] | None = None
        for field in struct.fields.values():
            if not field.for_version_q(self.version) or field.name in _NOT_TARGETS:
                continue
            value = getattr(item, field.name)
            entity = field._entity_type
            if value is None:
                if (
                    field.is_array()
                    and _names_topics(field, self.version)
                    and self.api not in _NULL_IS_UNCHANGED
                ):
                    self.all_topics = True
                continue
            if entity in ("groupId", "transactionalId") or field.name in self.group_keys:
                self.groups.update(
                    key for key in ([value] if isinstance(value, str) else value) if key
                )
            elif entity == "topicName":
                if isinstance(value, str):
                    topic = value or topic
                else:
                    for name in value:
                        self.add_topic(name, None)
            elif field.name == "topic_id" and value != _ZERO_UUID:
                topic = topic or self.topic_name_of(value)
            elif field.name in _PARTITION_FIELDS and field.type_str == "int32":
                partitions = (partitions or set()) | {value}
            elif field.name in _PARTITION_LISTS and field.is_array() and not field.fields:
                partitions = (partitions or set()) | set(value)
            elif field.is_struct_array():
                for element in value:
                    named = self.read(field, element)
                    if named is not None:
                        partitions = (partitions or set()) | named
            elif field.is_struct():
                self.read(field, value)
        if topic:
            self.add_topic(topic, partitions)
            return None
        return partitions


def request_targets(
    request: Any, topic_name_of: Callable[[UUID], str | None] = lambda topic_id: None
) -> Targets:
    """The topics (with partitions), groups, coordinator keys and transactional ids
    ``request`` names; topic ids become names through ``topic_name_of``."""
    if request.body is None:  # ApiVersions at a version not served: names nothing
        return Targets({}, frozenset(), False)
    spec, version = request.spec, request.api_version
    reader = _TargetReader(spec.name, version, topic_name_of)
    reader.read(spec.request_class._struct, request.body)
    if spec.name == "Metadata" and version == 0 and not request.body.topics:
        reader.all_topics = True  # v0 has no null: an empty list asks for every topic
    topics = {
        name: None if partitions is None else frozenset(partitions)
        for name, partitions in reader.topics.items()
    }
    return Targets(topics, frozenset(reader.groups), reader.all_topics)
