#!/usr/bin/env bash
# Inject a Produce error into a wireserver test broker, list the active controls, undo it.
# Run: WIRESERVER_CONTROLS_URL=http://127.0.0.1:PORT/controls bash example.sh
set -euo pipefail
controls="${WIRESERVER_CONTROLS_URL:?set it to the /controls URL of the broker}"

# send METHOD URL [JSON]: one request; prints "METHOD URL STATUS BODY", keeps the body in $body.
send() {
    local method="$1" url="$2" answer
    local options=(-sS -X "$method" -H 'Content-Type: application/json' -w '\n%{http_code}')
    if [ $# -ge 3 ]; then options+=(--data "$3"); fi
    answer="$(curl "${options[@]}" "$url")"
    body="${answer%$'\n'*}"
    echo "$method $url ${answer##*$'\n'} $body"
}

# The next 3 Produce requests are answered NOT_LEADER_OR_FOLLOWER instead of handled.
send POST "$controls" \
    '{"control": "error", "api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER", "count": 3}'
id="$(sed -nE 's/.*"id": *([0-9]+).*/\1/p' <<<"$body")"
send GET "$controls"
send DELETE "$controls/$id"
