"""ListTransactions (key 66), v0-2: every transactional id this coordinator knows, filtered by
state names (unknown names are echoed in ``unknown_state_filters``), producer ids, v1+
``duration_filter`` (open for at least that many ms) and v2+ ``transactional_id_pattern`` (a
regular expression matched against the whole id; an invalid one is INVALID_REGULAR_EXPRESSION).
Only the ids the principal may DESCRIBE are listed."""

from __future__ import annotations

import re

from wireserver.apis import HandlerResult, handles
from wireserver.context import RequestContext
from wireserver.protocol.errors import ErrorCode
from wireserver.security import checks

API_KEY = 66


@handles(API_KEY)
def handle(ctx: RequestContext) -> HandlerResult:
    body, version = ctx.body, ctx.version
    response_class = ctx.request.spec.response_class
    duration = body.duration_filter if version >= 1 else -1
    pattern = body.transactional_id_pattern if version >= 2 else None
    try:
        unknown, found = ctx.services.txn.list_transactions(
            list(body.state_filters or []),
            list(body.producer_id_filters or []),
            duration,
            pattern or None,
        )
    except re.error:
        return ctx.response(
            throttle_time_ms=0,
            error_code=_invalid_regex(),
            unknown_state_filters=[],
            transaction_states=[],
        )
    state_class = response_class.TransactionState
    return ctx.response(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        unknown_state_filters=unknown,
        transaction_states=[
            state_class(
                transactional_id=t.transactional_id,
                producer_id=t.producer_id,
                transaction_state=t.state.display,
            )
            for t in found
            if not checks.describe_transactional_id(ctx, t.transactional_id)
        ],
    )


def _invalid_regex() -> ErrorCode:
    return getattr(ErrorCode, "INVALID_REGULAR_EXPRESSION", ErrorCode.INVALID_REQUEST)
