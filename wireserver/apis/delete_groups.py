"""DeleteGroups (key 42), v0-3: removes empty groups and their committed offsets (tombstones in
``__consumer_offsets``); GROUP_ID_NOT_FOUND for an unknown group, NON_EMPTY_GROUP while it has
members. Each group needs DELETE (GROUP_AUTHORIZATION_FAILED).

v3's per-group ``error_message`` stays null: Kafka 4.4 fills it only when the deletion itself
fails (GROUP_DELETION_FAILED), which cannot happen here, and answers the errors above without
one (observed on a live 4.4.0 broker; compat_tests/raw_protocol.py compares it)."""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.security import checks

API_KEY = 42


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    coordinator = ctx.services.groups
    result_class = ctx.request.spec.response_class.DeletableGroupResult
    names = list(ctx.body.groups_names)
    error = coordinator.ensure_ready()
    denied = {name: checks.delete_group(ctx, name) for name in names}  # DELETE on the group
    allowed = [name for name in names if not denied[name]]
    if error is not None:
        results = {name: error for name in allowed}
    else:
        # Cluster mode: each group to its coordinator (NOT_COORDINATOR elsewhere).
        elsewhere = {n: e for n in allowed if (e := coordinator.ensure_ready(n)) is not None}
        results = coordinator.delete_groups([n for n in allowed if n not in elsewhere])
        results.update(elsewhere)
    results.update({name: code for name, code in denied.items() if code})
    return ctx.response(
        throttle_time_ms=0,
        results=[result_class(group_id=name, error_code=results[name]) for name in names],
    )
