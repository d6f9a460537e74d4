"""``ssl.principal.mapping.rules``: Kafka's rule syntax (cases from Kafka's
SslPrincipalMapperTest) and a TLS listener whose client certificates map to short names."""

from __future__ import annotations

import ssl

import pytest
from kafka.protocol.admin.acl import CreateAclsRequest

from tests.security.acls import acl, produce_with_client_certificate
from wireserver.config import BrokerConfig
from wireserver.security.acls import Operation
from wireserver.security.principals import NoMatchingRule, SslPrincipalMapper
from wireserver.testing import EmbeddedBroker, KafkaWire


@pytest.mark.parametrize(
    "rules,dn,name",
    [
        ("DEFAULT", "CN=Duke,OU=ServiceUsers,O=Org,C=US", "CN=Duke,OU=ServiceUsers,O=Org,C=US"),
        ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/", "CN=Duke,OU=ServiceUsers,O=Org,C=US", "Duke"),
        (
            "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
            "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US",
            "duke@javasoft",
        ),
        (
            "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/U",
            "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US",
            "DUKE@JAVASOFT",
        ),
        (
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/, DEFAULT",
            "CN=Duke,OU=Other,O=Org",
            "CN=Duke,OU=Other,O=Org",
        ),
        ("RULE:^CN=(.*?),OU=(.*?)$/$1\\/$2/", "CN=Duke,OU=Admin", "Duke/Admin"),  # escaped slash
        (
            "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
            "OU=JavaSoft,O=Sun Microsystems,CN=Duke",
            "duke",
        ),
    ],
)
def test_rules(rules, dn, name):
    assert SslPrincipalMapper(rules).name(dn) == name


def test_no_matching_rule():
    with pytest.raises(NoMatchingRule):
        SslPrincipalMapper("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/").name("CN=Duke,OU=Other")


@pytest.mark.parametrize(
    "rules", ["RULE:bad", "RULE:^CN=(.*)$/$1/Lx", "DEFAULTS", "RULE:^CN=(.*$/$1/"]
)
def test_malformed_rules_are_a_configuration_error(rules):
    with pytest.raises(ValueError, match="ssl.principal.mapping.rules"):
        BrokerConfig.load(None, {"ssl.principal.mapping.rules": rules})


def test_certificate_principal_follows_the_mapping_rules():
    """The client certificate CN=client,O=wireserver becomes User:CLIENT; an ACL for that
    name lets it produce; a certificate no rule maps is refused."""
    rules = "RULE:^CN=(.*?),O=wireserver$/$1/U"
    with EmbeddedBroker(
        tls=True,
        client_auth="required",
        authorizer=True,
        super_users=["User:WIRESERVER-ADMIN"],
        overrides={"ssl.principal.mapping.rules": rules},
    ) as broker:
        broker.create_topic("t")  # as the admin certificate: User:WIRESERVER-ADMIN
        with broker.wire() as wire:
            response = wire.request(
                CreateAclsRequest(version=3, creations=[acl("User:CLIENT", Operation.WRITE)])
            )
            assert response.results[0].error_code == 0
        assert produce_with_client_certificate(broker, "t") == [None]

    with EmbeddedBroker(
        tls=True,
        client_auth="required",
        overrides={"ssl.principal.mapping.rules": "RULE:^CN=nobody,.*$/x/"},
    ) as broker:
        context = ssl.create_default_context(cafile=broker.ca_path)
        context.load_cert_chain(broker.pki.client_cert, broker.pki.client_key)
        with pytest.raises(OSError):  # no rule maps CN=client: the connection is closed
            with KafkaWire(broker.bootstrap_servers, ssl_context=context, timeout=5):
                pass
