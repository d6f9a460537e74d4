"""AlterUserScramCredentials (key 51), v0: add, replace or delete SCRAM credentials.

Upsertions carry (mechanism, iterations, salt, salted password); the broker keeps only the
salt, iterations, StoredKey and ServerKey, persisted in the log dir (in cluster mode: in
ZooKeeper, one read-modify-write of ``/config/users/<user>`` per user). Needs ALTER on the
cluster. Per user: a user named twice is DUPLICATE_RESOURCE, an unknown mechanism
UNSUPPORTED_SASL_MECHANISM, iterations outside 4096-16384 or an empty name
UNACCEPTABLE_CREDENTIAL, deleting what does not exist RESOURCE_NOT_FOUND — as in Kafka.
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import authorize
from wireserver.security.acls import CLUSTER_NAME, Operation, ResourceType
from wireserver.security.scram import (
    MAX_ITERATIONS,
    MECHANISM_BY_ID,
    MIN_ITERATIONS,
    ScramCredential,
)

API_KEY = 51


def _problem(store, item, upsert: bool):
    mechanism = MECHANISM_BY_ID.get(item.mechanism)
    if not item.name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism is None:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    if upsert:
        if item.iterations < MIN_ITERATIONS:
            return (
                ErrorCode.UNACCEPTABLE_CREDENTIAL,
                f"Too few iterations: minimum is {MIN_ITERATIONS}",
            )
        if item.iterations > MAX_ITERATIONS:
            return (
                ErrorCode.UNACCEPTABLE_CREDENTIAL,
                f"Too many iterations: maximum is {MAX_ITERATIONS}",
            )
        if not item.salt or not item.salted_password:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt and salted password are required"
    elif store.get(item.name, mechanism) is None:
        return (
            ErrorCode.RESOURCE_NOT_FOUND,
            "Attempt to delete a user credential that does not exist",
        )
    return None


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    result_class = ctx.request.spec.response_class.AlterUserScramCredentialsResult
    body = ctx.body
    items = [(d, False) for d in body.deletions or []] + [(u, True) for u in body.upsertions or []]
    users = list(dict.fromkeys(item.name for item, _ in items))
    if not authorize(ctx, Operation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME):
        return ctx.response(
            throttle_time_ms=0,
            results=[
                result_class(
                    user=user, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=None
                )
                for user in users
            ],
        )
    store = ctx.services.security.scram
    errors: dict[str, tuple] = {}
    seen: set[tuple[str, int]] = set()
    for item, upsert in items:
        if (item.name, item.mechanism) in seen:
            errors.setdefault(
                item.name,
                (
                    ErrorCode.DUPLICATE_RESOURCE,
                    "A user credential cannot be altered twice in the same request",
                ),
            )
        seen.add((item.name, item.mechanism))
        problem = _problem(store, item, upsert)
        if problem is not None:
            errors.setdefault(item.name, problem)
    changes: dict[str, tuple[dict[str, ScramCredential], list[str]]] = {}
    for item, upsert in items:
        if item.name in errors:
            continue
        upserts, deletions = changes.setdefault(item.name, ({}, []))
        mechanism = MECHANISM_BY_ID[item.mechanism]
        if upsert:
            upserts[mechanism] = ScramCredential.from_salted_password(
                mechanism, bytes(item.salted_password), bytes(item.salt), item.iterations
            )
        else:
            deletions.append(mechanism)
    for user, (upserts, deletions) in changes.items():
        store.alter(user, upserts, deletions)
    return ctx.response(
        throttle_time_ms=0,
        results=[
            result_class(
                user=user,
                error_code=errors.get(user, (ErrorCode.NONE, None))[0],
                error_message=errors.get(user, (ErrorCode.NONE, None))[1],
            )
            for user in users
        ],
    )
