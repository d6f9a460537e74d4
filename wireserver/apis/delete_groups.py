"""DeleteGroups (key 42), v0-2: removes empty groups and their committed offsets (tombstones in
``__consumer_offsets``); GROUP_ID_NOT_FOUND for an unknown group, NON_EMPTY_GROUP while it has
members."""

from __future__ import annotations

from wireserver.apis import handles

API_KEY = 42


@handles(API_KEY)
def handle(ctx):
    coordinator = ctx.broker.groups
    result_class = ctx.request.spec.response_class.DeletableGroupResult
    names = list(ctx.body.groups_names)
    error = coordinator.ensure_ready()
    if error is not None:
        results = {name: error for name in names}
    else:
        # Cluster mode: each group to its coordinator (NOT_COORDINATOR elsewhere).
        elsewhere = {n: e for n in names if (e := coordinator.ensure_ready(n)) is not None}
        results = coordinator.delete_groups([n for n in names if n not in elsewhere])
        results.update(elsewhere)
    return ctx.response(throttle_time_ms=0, results=[
        result_class(group_id=name, error_code=results[name]) for name in names])
