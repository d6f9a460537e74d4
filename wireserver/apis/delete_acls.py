"""DeleteAcls (key 31), v1-3: remove every ACL that a filter matches; each filter's result
lists what it matched. Needs ALTER on the cluster. Without an authorizer: SECURITY_DISABLED.
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.apis.describe_acls import acl_filter
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import authorize
from wireserver.security.acls import CLUSTER_NAME, Operation, ResourceType

API_KEY = 31


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    result_class = ctx.request.spec.response_class.DeleteAclsFilterResult
    matching_class = result_class.DeleteAclsMatchingAcl
    authorizer = ctx.services.security.authorizer
    filters = [acl_filter(item) for item in ctx.body.filters]
    if authorizer is None:
        code, message = ErrorCode.SECURITY_DISABLED, "No Authorizer is configured."
    elif not authorize(ctx, Operation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        code, message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None
    else:
        code = None
    if code is not None:
        return ctx.response(
            throttle_time_ms=0,
            filter_results=[
                result_class(error_code=code, error_message=message, matching_acls=[])
                for _ in filters
            ],
        )
    valid = [f for f in filters if f.invalid() is None]
    assert authorizer is not None
    matched = iter(authorizer.delete(valid))
    results = []
    for acl_filter_ in filters:
        problem = acl_filter_.invalid()
        if problem is not None:
            results.append(
                result_class(
                    error_code=ErrorCode.INVALID_REQUEST, error_message=problem, matching_acls=[]
                )
            )
            continue
        results.append(
            result_class(
                error_code=ErrorCode.NONE,
                error_message=None,
                matching_acls=[
                    matching_class(
                        error_code=ErrorCode.NONE,
                        error_message=None,
                        resource_type=acl.resource_type,
                        resource_name=acl.resource_name,
                        pattern_type=acl.pattern_type,
                        principal=acl.principal,
                        host=acl.host,
                        operation=acl.operation,
                        permission_type=acl.permission,
                    )
                    for acl in next(matched)
                ],
            )
        )
    return ctx.response(throttle_time_ms=0, filter_results=results)
