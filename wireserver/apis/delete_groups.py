"""DeleteGroups (key 42), v0-3: removes empty groups and their committed offsets (tombstones in
``__consumer_offsets``); GROUP_ID_NOT_FOUND for an unknown group, NON_EMPTY_GROUP while it has
members. Each group needs DELETE (GROUP_AUTHORIZATION_FAILED).

An empty share group's share-partition state is deleted at its share coordinators first, and the
group only once that has succeeded, as Kafka's ``GroupCoordinatorService.deleteGroups`` does
through its persister: a group whose state could not be deleted stays, answered with that error,
so that deleting it again can finish the job (the other way round, a retry would find no group
and the state would outlive it, to be read by a new group of the same name).

v3's per-group ``error_message`` stays null: Kafka 4.4 fills it only when the deletion itself
fails (GROUP_DELETION_FAILED), which wireserver never answers, and answers the errors above
without one (observed on a live 4.4.0 broker; compat_tests/raw_protocol.py compares it)."""

from __future__ import annotations

from twisted.internet import defer

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks
from wireserver.share import member_partitions

API_KEY = 42


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    coordinator = ctx.services.groups
    names = list(ctx.body.groups_names)
    error = coordinator.ensure_ready()
    denied = {name: checks.delete_group(ctx, name) for name in names}  # DELETE on the group
    allowed = [name for name in names if not denied[name]]
    if error is not None:
        return respond(ctx, names, {name: error for name in allowed}, denied)
    # Cluster mode: each group to its coordinator (NOT_COORDINATOR elsewhere).
    elsewhere = {n: e for n in allowed if (e := coordinator.ensure_ready(n)) is not None}
    here = [n for n in allowed if n not in elsewhere]
    share_groups = coordinator.share.groups
    with_state = [n for n in here if n in share_groups and not share_groups[n].members]
    if not with_state:
        return respond(ctx, names, {**coordinator.delete_groups(here), **elsewhere}, denied)
    partitions = member_partitions(ctx.services.metadata)
    share = ctx.services.share

    def state_deleted(answers: list[ErrorCode]) -> HandlerResult:
        failed = {n: e for n, e in zip(with_state, answers, strict=True) if e != ErrorCode.NONE}
        deleted = coordinator.delete_groups([n for n in here if n not in failed])
        return respond(ctx, names, {**deleted, **failed, **elsewhere}, denied)

    return defer.gatherResults(
        [share.delete_group_state(name, partitions) for name in with_state]
    ).addCallback(state_deleted)


def respond(
    ctx: RequestContext,
    names: list[str],
    results: dict[str, ErrorCode],
    denied: dict[str, ErrorCode | None],
) -> HandlerResult:
    result_class = ctx.request.spec.response_class.DeletableGroupResult
    results.update({name: code for name, code in denied.items() if code})
    return ctx.response(
        throttle_time_ms=0,
        results=[result_class(group_id=name, error_code=results[name]) for name in names],
    )
