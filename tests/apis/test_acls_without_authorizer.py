"""ACL requests to a broker without an authorizer (confluent-kafka's admin client drops
DescribeAcls' top-level error, so the request goes raw)."""

from __future__ import annotations

from kafka.protocol.admin.acl import DescribeAclsRequest, DescribeAclsResponse


def test_describe_acls_says_no_authorizer_is_configured(raw):
    """kafka-acls --list prints the broker's own sentence: Kafka's is "No Authorizer is
    configured on the broker" (DescribeAcls only; CreateAcls and DeleteAcls say it shorter)."""
    any_of = {"operation": 1, "permission_type": 1}  # ANY
    for version in (1, 2, 3):
        answer = raw.send(
            DescribeAclsRequest,
            DescribeAclsResponse,
            version,
            resource_type_filter=1,
            resource_name_filter=None,
            pattern_type_filter=1,
            principal_filter=None,
            host_filter=None,
            **any_of,
        )
        assert (answer.error_code, answer.error_message) == (
            54,  # SECURITY_DISABLED
            "No Authorizer is configured on the broker",
        )
