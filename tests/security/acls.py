"""ACLs as the security tests set them: one ACL binding created through CreateAcls, and a produce
authenticated by a TLS client certificate (whose principal the ACLs name)."""

from __future__ import annotations

from kafka.protocol.admin.acl import CreateAclsRequest

from wireserver.security.acls import PatternType, Permission, ResourceType


def acl(
    principal,
    operation,
    resource_type=ResourceType.TOPIC,
    name="t",
    pattern=PatternType.LITERAL,
    permission=Permission.ALLOW,
):
    return CreateAclsRequest.AclCreation(
        resource_type=resource_type,
        resource_name=name,
        resource_pattern_type=pattern,
        principal=principal,
        host="*",
        operation=operation,
        permission_type=permission,
    )


def produce_with_client_certificate(broker, topic):
    """confluent-kafka sends one record with the test PKI's client certificate; the delivery
    errors (``[None]`` when it was written)."""
    import confluent_kafka

    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "security.protocol": "SSL",
            "ssl.ca.location": broker.ca_path,
            "ssl.certificate.location": broker.pki.client_cert,
            "ssl.key.location": broker.pki.client_key,
        }
    )
    errors = []
    producer.produce(topic, b"x", on_delivery=lambda err, msg: errors.append(err))
    producer.flush(15)
    return errors
