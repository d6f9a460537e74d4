"""UpdateFeatures (key 57), v0-2: upgrade, downgrade or disable finalized feature levels
(``kafka-features upgrade / downgrade / disable``; ``describe`` reads ApiVersions).

Kafka's controller checks each update as ``FeatureControlManager.updateFeature`` does: a known
feature (one of ``wireserver.features``), a level between 0 and what every broker supports, no
lowering with upgrade type UPGRADE (always v0's) and no raising with a
downgrade type; each refusal is INVALID_UPDATE_VERSION with Kafka's message. The request is
all or nothing: one refused update leaves every level as it was. ``ValidateOnly`` (v1+) checks
without changing anything. The answer is at the top ("The update failed for all features since
the following feature had an error: ..."); v0-1 also list each feature of a request that
succeeded. Needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED).

In a cluster every broker supports the same features (one code base), so a broker checks
against its own table and writes the new levels to ZooKeeper, which tells every broker.
"""

from __future__ import annotations

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks
from wireserver.security.acls import Operation

API_KEY = 57
UNKNOWN, UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 0, 1, 2, 3
FAILED = "The update failed for all features since the following feature had an error: "


def refusal(ctx: RequestContext, update) -> str | None:
    """Why Kafka's controller would refuse ``update``, or None."""
    features = ctx.services.features
    name, level = update.feature, update.max_version_level
    # v0's AllowDowngrade is ignored: Kafka 4.4 refuses any v0 downgrade as an upgrade.
    upgrade_type = UPGRADE if ctx.version == 0 else update.upgrade_type
    current = features.level(name)
    supported = features.supported.get(name)
    if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        reason = "The controller does not support the given upgrade type."
    elif level < 0:
        reason = "A feature version cannot be less than 0."
    elif supported is None:
        reason = f"Local controller {ctx.services.node_id} does not support this feature."
    elif level > supported:
        reason = f"Local controller {ctx.services.node_id} only supports versions 0-{supported}"
    elif level < current and upgrade_type == UPGRADE:
        reason = (
            "Can't downgrade the version of this feature without setting the upgrade type "
            "to either safe or unsafe downgrade."
        )
    elif level > current and upgrade_type != UPGRADE:
        reason = "Can't downgrade to a newer version."
    else:
        return None
    return f"Invalid update version {level} for feature {name}. {reason}"


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    updates = ctx.body.feature_updates
    denied = checks.cluster(ctx, Operation.ALTER)
    if denied:
        return answer(ctx, [], denied, checks.message(denied))
    for update in updates:
        reason = refusal(ctx, update)
        if reason:
            return answer(ctx, [], ErrorCode.INVALID_UPDATE_VERSION, FAILED + reason)
    if not (ctx.version >= 1 and ctx.body.validate_only):
        levels = {update.feature: max(update.max_version_level, 0) for update in updates}
        ctx.services.features.update(levels)
    return answer(ctx, updates, ErrorCode.NONE, None)


def answer(ctx: RequestContext, updates, error: ErrorCode, message: str | None) -> HandlerResult:
    """The outcome at the top; v0-1 also list ``updates`` (every feature of a request that
    succeeded, with the message "NONE" as Kafka 4.4 writes it; none for a refused one)."""
    listed = {}
    if ctx.version < 2:
        result = ctx.request.spec.response_class.UpdatableFeatureResult
        listed["results"] = [
            result(feature=update.feature, error_code=ErrorCode.NONE, error_message="NONE")
            for update in updates
        ]
    return ctx.response(throttle_time_ms=0, error_code=error, error_message=message, **listed)
