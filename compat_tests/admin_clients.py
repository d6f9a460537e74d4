"""Topic administration through each client's own admin API (or Kafka's CLI tools for Java).

Every function returns plain data; Kafka errors come back as their *names*, the way each
client shows them, so that an observation holds what a user would see.
"""

from __future__ import annotations

import json
import re
from typing import Any

from compat_tests.clients import ClientError, Unsupported, _java_error
from compat_tests.reference import run_tool

ADMIN_CLIENTS = ("kafka-python", "confluent-kafka", "java")


def _kp_admin(bootstrap: str, security: dict[str, Any] | None = None):
    """kafka-python's admin client; ``security`` adds settings (SASL credentials, say)."""
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(
        bootstrap_servers=bootstrap,
        client_id="compat-kafka-python-admin",
        request_timeout_ms=15000,
        **(security or {}),
    )


def _cf_admin(bootstrap: str, security: dict[str, Any] | None = None):
    from confluent_kafka.admin import AdminClient

    return AdminClient(
        {"bootstrap.servers": bootstrap, "client.id": "compat-confluent-admin", **(security or {})}
    )


def _kp_error(exc: BaseException) -> str:
    from compat_tests.clients import _kafka_error_name

    return _kafka_error_name(exc)


def _cf_error(exc: BaseException) -> str:
    from confluent_kafka import KafkaException

    if isinstance(exc, KafkaException) and exc.args:
        return exc.args[0].name()
    return type(exc).__name__


def _tool(name: str, args: list[str], bootstrap: str, input: str | None = None):
    proc = run_tool(name, args, bootstrap=bootstrap, input=input, timeout=90)
    return proc, _java_error(proc.stderr + proc.stdout)


# --------------------------------------------------------------------------- create / delete


def create_topic(
    client: str,
    bootstrap: str,
    name: str,
    partitions: int,
    configs: dict[str, str] | None = None,
    validate_only: bool = False,
    security: dict[str, Any] | None = None,
) -> str:
    """Create a topic; returns "ok" or the error name. ``security``: extra client settings
    (kafka-python and confluent-kafka)."""
    configs = configs or {}
    if client == "kafka-python":
        from kafka.admin import NewTopic

        admin = _kp_admin(bootstrap, security)
        try:
            admin.create_topics(
                [NewTopic(name, partitions, 1, topic_configs=configs)], validate_only=validate_only
            )
            return "ok"
        except Exception as exc:
            return _kp_error(exc)
        finally:
            admin.close()
    if client == "confluent-kafka":
        from confluent_kafka.admin import NewTopic

        admin = _cf_admin(bootstrap, security)
        futures = admin.create_topics(
            [NewTopic(name, partitions, 1, config=configs)],
            validate_only=validate_only,
            request_timeout=15,
        )
        try:
            futures[name].result(timeout=20)
            return "ok"
        except Exception as exc:
            return _cf_error(exc)
    if client == "java":
        if validate_only or security:
            raise Unsupported("kafka-topics: no validate-only option; no security settings here")
        args = [
            "--create",
            "--topic",
            name,
            "--partitions",
            str(partitions),
            "--replication-factor",
            "1",
        ]
        for k, v in configs.items():
            args += ["--config", f"{k}={v}"]
        proc, error = _tool("kafka-topics", args, bootstrap)
        if error:
            return error
        return (
            "ok"
            if proc.returncode == 0 and "Created topic" in proc.stdout
            else f"exit {proc.returncode}"
        )
    raise Unsupported(client)


def delete_topic(client: str, bootstrap: str, name: str) -> str:
    if client == "kafka-python":
        admin = _kp_admin(bootstrap)
        try:
            admin.delete_topics([name])
            return "ok"
        except Exception as exc:
            return _kp_error(exc)
        finally:
            admin.close()
    if client == "confluent-kafka":
        admin = _cf_admin(bootstrap)
        try:
            admin.delete_topics([name], request_timeout=15)[name].result(timeout=20)
            return "ok"
        except Exception as exc:
            return _cf_error(exc)
    if client == "java":
        proc, error = _tool("kafka-topics", ["--delete", "--topic", name], bootstrap)
        if error:
            return error
        if "does not exist" in proc.stderr + proc.stdout:
            return "does not exist"  # kafka-topics checks the topic list itself
        return "ok" if proc.returncode == 0 else f"exit {proc.returncode}"
    raise Unsupported(client)


def create_partitions(client: str, bootstrap: str, name: str, total: int) -> str:
    if client == "kafka-python":
        from kafka.admin import NewPartitions

        admin = _kp_admin(bootstrap)
        try:
            admin.create_partitions({name: NewPartitions(total)})
            return "ok"
        except Exception as exc:
            return _kp_error(exc)
        finally:
            admin.close()
    if client == "confluent-kafka":
        from confluent_kafka.admin import NewPartitions

        admin = _cf_admin(bootstrap)
        try:
            admin.create_partitions([NewPartitions(name, total)], request_timeout=15)[name].result(
                timeout=20
            )
            return "ok"
        except Exception as exc:
            return _cf_error(exc)
    if client == "java":
        proc, error = _tool(
            "kafka-topics", ["--alter", "--topic", name, "--partitions", str(total)], bootstrap
        )
        if error:
            return error
        return "ok" if proc.returncode == 0 else f"exit {proc.returncode}"
    raise Unsupported(client)


# --------------------------------------------------------------------------- configs

#: config resource kind -> (kafka-python ConfigResourceType name, confluent-kafka's name,
#: kafka-configs --entity-type)
CONFIG_KINDS = {
    "topic": ("TOPIC", "topic", "topics"),
    "broker": ("BROKER", "broker", "brokers"),
    "group": ("GROUP", "group", "groups"),
}


def describe_topic_configs(
    client: str, bootstrap: str, name: str, keys: list[str]
) -> dict[str, list]:
    """{key: [value, source]} for ``keys`` of topic ``name`` (source as Kafka names it:
    DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG, STATIC_BROKER_CONFIG, ...)."""
    return describe_configs(client, bootstrap, "topic", name, keys)


def describe_configs(
    client: str, bootstrap: str, kind: str, name: str, keys: list[str]
) -> dict[str, list]:
    """{key: [value, source]} for ``keys`` of the ``kind`` ("topic", "broker" or "group")
    resource ``name``; a key the broker does not describe is None."""
    kp_kind, cf_kind, entity_type = CONFIG_KINDS[kind]
    if client == "kafka-python":
        from kafka.admin import ConfigResource, ConfigResourceType

        admin = _kp_admin(bootstrap)
        try:
            found = admin.describe_configs(
                [ConfigResource(getattr(ConfigResourceType, kp_kind), name)], config_filter="all"
            )
        except Exception as exc:
            raise ClientError(_kp_error(exc), str(exc)) from exc
        finally:
            admin.close()
        configs = (
            found[kp_kind][name]
            if kp_kind in found
            else next(iter(next(iter(found.values())).values()))
        )
        out = {}
        for key in keys:
            entry = configs.get(key)
            if entry is None:
                out[key] = None
                continue
            source = entry.get("config_source", entry.get("source"))
            out[key] = [entry.get("value"), _source_name(source)]
        return out
    if client == "confluent-kafka":
        from confluent_kafka.admin import ConfigResource

        admin = _cf_admin(bootstrap)
        resource = ConfigResource(cf_kind, name)
        try:
            configs = admin.describe_configs([resource], request_timeout=15)[resource].result(
                timeout=20
            )
        except Exception as exc:
            raise ClientError(_cf_error(exc), str(exc)) from exc
        return {
            k: ([configs[k].value, _source_name(configs[k].source)] if k in configs else None)
            for k in keys
        }
    if client == "java":
        proc, error = _tool(
            "kafka-configs",
            ["--describe", "--all", "--entity-type", entity_type, "--entity-name", name],
            bootstrap,
        )
        if error or proc.returncode:
            raise ClientError(error or f"exit {proc.returncode}", proc.stderr[-600:])
        out = {k: None for k in keys}
        for line in proc.stdout.splitlines():
            # the source is the first synonym's; kafka-configs prints none for some keys
            m = re.match(r"\s+([\w.]+)=(.*?) sensitive=\w+ synonyms=\{(\w*)", line)
            if m and m.group(1) in out:
                out[m.group(1)] = [m.group(2), m.group(3)]
        return out
    raise Unsupported(client)


def _source_name(source: Any) -> str:
    names = {
        1: "DYNAMIC_TOPIC_CONFIG",
        2: "DYNAMIC_BROKER_CONFIG",
        3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
        4: "STATIC_BROKER_CONFIG",
        5: "DEFAULT_CONFIG",
        6: "DYNAMIC_BROKER_LOGGER_CONFIG",
        7: "CLIENT_METRICS_CONFIG",
        8: "GROUP_CONFIG",
        0: "UNKNOWN",
    }
    if isinstance(source, int):
        return names.get(source, str(source))
    value = getattr(source, "value", None)
    if isinstance(value, int):
        return names.get(value, str(value))
    text = str(getattr(source, "name", source))
    return text.rsplit(".", 1)[-1].upper()


def alter_topic_config(
    client: str,
    bootstrap: str,
    name: str,
    set_: dict[str, str],
    delete: list[str] = (),
    incremental: bool = True,
) -> str:
    return alter_configs(client, bootstrap, "topic", name, set_, delete, incremental)


def alter_configs(
    client: str,
    bootstrap: str,
    kind: str,
    name: str,
    set_: dict[str, str],
    delete: list[str] = (),
    incremental: bool = True,
) -> str:
    """SET ``set_`` and DELETE ``delete`` on the ``kind`` resource ``name`` (legacy
    AlterConfigs when not ``incremental``: ``set_`` becomes the whole set); "ok" or the
    error's name."""
    kp_kind, cf_kind, entity_type = CONFIG_KINDS[kind]
    if client == "kafka-python":
        from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType

        admin = _kp_admin(bootstrap)
        resource_type = getattr(ConfigResourceType, kp_kind)
        try:
            if incremental:
                ops = {k: (AlterConfigOp.SET, v) for k, v in set_.items()}
                ops.update({k: (AlterConfigOp.DELETE, None) for k in delete})
                resource = ConfigResource(resource_type, name, ops)
            else:
                resource = ConfigResource(resource_type, name, dict(set_))
            result = admin.alter_configs(
                [resource], incremental=incremental, raise_on_unknown=False
            )
            return _kp_alter_result(result)
        except Exception as exc:
            return _kp_error(exc)
        finally:
            admin.close()
    if client == "confluent-kafka":
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

        admin = _cf_admin(bootstrap)
        try:
            if incremental:
                entries = [
                    ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
                    for k, v in set_.items()
                ]
                entries += [
                    ConfigEntry(k, "", incremental_operation=AlterConfigOpType.DELETE)
                    for k in delete
                ]
                resource = ConfigResource(cf_kind, name, incremental_configs=entries)
                futures = admin.incremental_alter_configs([resource], request_timeout=15)
            else:
                resource = ConfigResource(cf_kind, name, set_config=dict(set_))
                futures = admin.alter_configs([resource], request_timeout=15)
            for f in futures.values():
                f.result(timeout=20)
            return "ok"
        except Exception as exc:
            return _cf_error(exc)
    if client == "java":
        if not incremental:
            raise Unsupported("kafka-configs only uses IncrementalAlterConfigs")
        args = ["--alter", "--entity-type", entity_type, "--entity-name", name]
        if set_:
            args += ["--add-config", ",".join(f"{k}={v}" for k, v in set_.items())]
        if delete:
            args += ["--delete-config", ",".join(delete)]
        proc, error = _tool("kafka-configs", args, bootstrap)
        if error:
            return error
        return "ok" if proc.returncode == 0 else f"exit {proc.returncode}"
    raise Unsupported(client)


def _kp_alter_result(result: Any) -> str:
    """kafka-python answers {resource_type: {name: Error or result}}: the first error's name."""

    def errors(node):
        if isinstance(node, dict):
            for v in node.values():
                yield from errors(v)
        elif isinstance(node, BaseException) or (
            isinstance(node, type) and issubclass(node, BaseException)
        ):
            errno = getattr(node, "errno", 0)
            if errno:
                yield getattr(node, "message", None) or type(node).__name__
        elif isinstance(node, str):
            m = re.match(r"\[Error (-?\d+)\]", node)
            if m and int(m.group(1)):
                from kafka.errors import for_code

                yield for_code(int(m.group(1))).message

    found = list(errors(result))
    return found[0] if found else "ok"


# --------------------------------------------------------------------------- cluster


def describe_cluster(client: str, bootstrap: str) -> dict[str, Any]:
    if client == "kafka-python":
        admin = _kp_admin(bootstrap)
        try:
            found = admin.describe_cluster()
        finally:
            admin.close()
        ids = [b.get("node_id", b.get("broker_id")) for b in found["brokers"]]
        controller = found.get("controller_id")
        return {
            "brokers": len(ids),
            "controller_is_a_broker": controller in ids,
            "cluster_id_set": bool(found.get("cluster_id")),
        }
    if client == "confluent-kafka":
        admin = _cf_admin(bootstrap)
        found = admin.describe_cluster(request_timeout=15).result(timeout=20)
        ids = [n.id for n in found.nodes]
        return {
            "brokers": len(ids),
            "controller_is_a_broker": found.controller is not None and found.controller.id in ids,
            "cluster_id_set": bool(found.cluster_id),
        }
    if client == "java":
        proc, error = _tool("kafka-broker-api-versions", [], bootstrap)
        if error or proc.returncode:
            raise ClientError(error or f"exit {proc.returncode}", proc.stderr[-600:])
        brokers = re.findall(r"^\S+:\d+ \(id: (\d+) rack", proc.stdout, re.M)
        return {"brokers": len(brokers)}
    raise Unsupported(client)


def authorized_operations(
    client: str, bootstrap: str, topic: str, group: str, security: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The operations the client's admin API says the principal may do (KIP-430: described
    with authorized operations included) on ``topic``, the cluster and ``group``: sorted
    names, or None where the client shows none."""

    def names(found: Any) -> list[str] | None:
        return None if found is None else sorted(getattr(op, "name", op) for op in found)

    if client == "kafka-python":
        admin = _kp_admin(bootstrap, security)
        try:
            [described] = admin.describe_topics([topic])
            return {
                "topic": names(described["authorized_operations"]),
                "cluster": names(admin.describe_cluster()["authorized_operations"]),
                "group": names(admin.describe_groups([group])[group]["authorized_operations"]),
            }
        finally:
            admin.close()
    if client == "confluent-kafka":
        from confluent_kafka import TopicCollection

        admin = _cf_admin(bootstrap, security)
        [described] = admin.describe_topics(
            TopicCollection([topic]), request_timeout=15, include_authorized_operations=True
        ).values()
        cluster = admin.describe_cluster(request_timeout=15, include_authorized_operations=True)
        [in_group] = admin.describe_consumer_groups(
            [group], request_timeout=15, include_authorized_operations=True
        ).values()
        return {
            "topic": names(described.result(timeout=20).authorized_operations),
            "cluster": names(cluster.result(timeout=20).authorized_operations),
            "group": names(in_group.result(timeout=20).authorized_operations),
        }
    raise Unsupported(client)


def describe_groups(client: str, bootstrap: str, group: str) -> dict[str, Any]:
    """kafka-python's DescribeGroups answer for ``group`` as it returns it (state, error,
    members...); librdkafka's describe_consumer_groups hides the raw state."""
    if client != "kafka-python":
        raise Unsupported(client)
    admin = _kp_admin(bootstrap)
    try:
        return admin.describe_groups([group])[group]
    finally:
        admin.close()


def describe_topic(client: str, bootstrap: str, name: str) -> dict[int, dict[str, Any]]:
    """{partition: {"leader": id, "replicas": [ids], "isr": [ids]}} as the client shows the
    topic (the Java tool is ``kafka-topics --describe``)."""
    if client == "kafka-python":
        admin = _kp_admin(bootstrap)
        try:
            [found] = admin.describe_topics([name])
        except Exception as exc:
            raise ClientError(_kp_error(exc), str(exc)) from exc
        finally:
            admin.close()
        return {
            p["partition_index"]: {
                "leader": p["leader_id"],
                "replicas": p["replica_nodes"],
                "isr": p["isr_nodes"],
            }
            for p in found["partitions"]
        }
    if client == "confluent-kafka":
        found = _cf_admin(bootstrap).list_topics(name, timeout=20).topics[name]
        if found.error is not None:
            raise ClientError(found.error.name(), found.error.str())
        return {
            p.id: {"leader": p.leader, "replicas": list(p.replicas), "isr": list(p.isrs)}
            for p in found.partitions.values()
        }
    if client == "java":
        proc, error = _tool("kafka-topics", ["--describe", "--topic", name], bootstrap)
        if error or proc.returncode:
            raise ClientError(error or f"exit {proc.returncode}", proc.stderr[-600:])
        out = {}
        for m in re.finditer(
            r"Partition: (\d+)\s+Leader: (-?\d+)\s+Replicas: ([\d,]*)\s+"
            r"Isr: ([\d,]*)",
            proc.stdout,
        ):
            ids = [[int(i) for i in group.split(",") if i] for group in m.group(3, 4)]
            out[int(m.group(1))] = {"leader": int(m.group(2)), "replicas": ids[0], "isr": ids[1]}
        return out
    raise Unsupported(client)


def describe_log_dirs(client: str, bootstrap: str, topic: str) -> dict[str, Any]:
    """Partitions of ``topic`` listed in DescribeLogDirs, and whether they report a size."""
    if client == "kafka-python":
        admin = _kp_admin(bootstrap)
        try:
            found = admin.describe_log_dirs()
        finally:
            admin.close()
        text = found if isinstance(found, (dict, list)) else repr(found)
        return _log_dirs_from_python(text, topic)
    if client == "java":
        proc, error = _tool("kafka-log-dirs", ["--describe", "--topic-list", topic], bootstrap)
        if error or proc.returncode:
            raise ClientError(error or f"exit {proc.returncode}", proc.stderr[-600:])
        line = next(out for out in proc.stdout.splitlines() if out.startswith("{"))
        data = json.loads(line)
        parts = sorted(
            p["partition"]
            for b in data["brokers"]
            for d in b["logDirs"]
            for p in d["partitions"]
            if p["partition"].startswith(topic + "-")
        )
        return {
            "partitions": [p[len(topic) + 1 :] for p in parts],
            "log_dirs": sum(len(b["logDirs"]) for b in data["brokers"]),
        }
    raise Unsupported(client)


def _log_dirs_from_python(found: Any, topic: str) -> dict[str, Any]:
    parts: set[str] = set()
    dirs = 0

    def walk(node: Any) -> None:
        nonlocal dirs
        if isinstance(node, dict):
            if "log_dir" in node:
                dirs += 1
            if node.get("name") == topic or node.get("topic") == topic:
                for p in node.get("partitions", []):
                    parts.add(str(p.get("partition_index", p.get("partition"))))
            for v in node.values():
                walk(v)
        elif isinstance(node, (list, tuple)):
            for v in node:
                walk(v)
        elif hasattr(node, "to_dict"):
            walk(node.to_dict())

    walk(found)
    return {"partitions": sorted(parts), "log_dirs": dirs}


def delete_records(client: str, bootstrap: str, topic: str, partition: int, before: int) -> str:
    if client == "kafka-python":
        from kafka import TopicPartition

        admin = _kp_admin(bootstrap)
        try:
            admin.delete_records({TopicPartition(topic, partition): before})
            return "ok"
        except Exception as exc:
            return _kp_error(exc)
        finally:
            admin.close()
    if client == "confluent-kafka":
        from confluent_kafka import TopicPartition

        admin = _cf_admin(bootstrap)
        try:
            futures = admin.delete_records(
                [TopicPartition(topic, partition, before)], request_timeout=15
            )
            for f in futures.values():
                f.result(timeout=20)
            return "ok"
        except Exception as exc:
            return _cf_error(exc)
    if client == "aiokafka":
        import asyncio

        from aiokafka import TopicPartition
        from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete

        async def run() -> str:
            admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
            await admin.start()
            try:
                await admin.delete_records(
                    {TopicPartition(topic, partition): RecordsToDelete(before_offset=before)}
                )
                return "ok"
            except Exception as exc:
                return _kp_error(exc)
            finally:
                await admin.close()

        return asyncio.run(run())
    if client == "java":
        import tempfile

        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump(
                {
                    "version": 1,
                    "partitions": [{"topic": topic, "partition": partition, "offset": before}],
                },
                f,
            )
            f.flush()
            proc, error = _tool("kafka-delete-records", ["--offset-json-file", f.name], bootstrap)
        if error:
            return error
        m = re.search(r"partition: \S+\s+(error|low_watermark): ?(\S*)", proc.stdout)
        if m and m.group(1) == "error":
            return m.group(2) or "error"
        return "ok" if proc.returncode == 0 else f"exit {proc.returncode}"
    raise Unsupported(client)
