"""DescribeAcls (key 29), v1-3: the ACLs a filter matches, grouped by resource pattern.

Needs DESCRIBE on the cluster. Without an authorizer: SECURITY_DISABLED, "No Authorizer is
configured on the broker".
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import authorize
from wireserver.security.acls import CLUSTER_NAME, AclFilter, Operation, ResourceType

API_KEY = 29


def acl_filter(item) -> AclFilter:
    return AclFilter(
        item.resource_type_filter,
        item.resource_name_filter,
        item.pattern_type_filter,
        item.principal_filter,
        item.host_filter,
        item.operation,
        item.permission_type,
    )


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    response_class = ctx.request.spec.response_class
    authorizer = ctx.services.security.authorizer

    def error(code, message=None):
        return ctx.response(
            throttle_time_ms=0, error_code=code, error_message=message, resources=[]
        )

    if authorizer is None:
        # Kafka writes this answer by hand (AclApis), unlike CreateAcls and DeleteAcls
        return error(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker")
    if not authorize(ctx, Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    wanted = acl_filter(ctx.body)
    problem = wanted.invalid()
    if problem is not None:
        return error(ErrorCode.INVALID_REQUEST, problem)
    resource_class = response_class.DescribeAclsResource
    description_class = resource_class.AclDescription
    grouped: dict[tuple, list] = {}
    for acl in authorizer.describe(wanted):
        key = (acl.resource_type, acl.resource_name, acl.pattern_type)
        grouped.setdefault(key, []).append(
            description_class(
                principal=acl.principal,
                host=acl.host,
                operation=acl.operation,
                permission_type=acl.permission,
            )
        )
    resources = [
        resource_class(resource_type=rtype, resource_name=name, pattern_type=ptype, acls=acls)
        for (rtype, name, ptype), acls in grouped.items()
    ]
    return ctx.response(
        throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, resources=resources
    )
