"""DescribeUserScramCredentials (key 50), v0: mechanism and iterations of each user's SCRAM
credentials (never the credentials). Users null/empty = every user. Needs DESCRIBE on the
cluster. A named user without credentials is RESOURCE_NOT_FOUND, a user named twice
DUPLICATE_RESOURCE, as in Kafka.
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import authorize
from wireserver.security.acls import CLUSTER_NAME, Operation, ResourceType
from wireserver.security.scram import MECHANISMS

API_KEY = 50


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    result_class = ctx.request.spec.response_class.DescribeUserScramCredentialsResult
    info_class = result_class.CredentialInfo
    if not authorize(ctx, Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return ctx.response(
            throttle_time_ms=0,
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            error_message=None,
            results=[],
        )
    store = ctx.services.security.scram
    known = store.users()
    requested = [user.name for user in ctx.body.users or []]
    names = requested or sorted(known)
    results = []
    for name in dict.fromkeys(names):
        if requested.count(name) > 1:
            results.append(
                result_class(
                    user=name,
                    error_code=ErrorCode.DUPLICATE_RESOURCE,
                    error_message=f"Cannot describe SCRAM credentials for "
                    f"the same user twice in a single "
                    f"request: {name}",
                    credential_infos=[],
                )
            )
        elif name not in known:
            results.append(
                result_class(
                    user=name,
                    error_code=ErrorCode.RESOURCE_NOT_FOUND,
                    error_message=f"Attempt to describe a user credential "
                    f"that does not exist: {name}",
                    credential_infos=[],
                )
            )
        else:
            results.append(
                result_class(
                    user=name,
                    error_code=ErrorCode.NONE,
                    error_message=None,
                    credential_infos=[
                        info_class(mechanism=MECHANISMS[mech][0], iterations=cred.iterations)
                        for mech, cred in sorted(known[name].items())
                    ],
                )
            )
    return ctx.response(
        throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, results=results
    )
