"""What a handler sees of a request: the decoded request, the broker's services, the peer.
Handlers never touch the transport."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka.protocol.api_message import ApiMessage

from wireserver.protocol.messages import Request
from wireserver.security import ConnectionSecurity

if TYPE_CHECKING:
    from wireserver.services import Services


@dataclass(slots=True)
class RequestContext:
    request: Request
    #: what the handler may use of the broker (``wireserver.services``)
    services: Services
    peer: str
    listener_name: str
    #: the connection's security state (principal, host, SASL), None on a plain listener
    security: ConnectionSecurity | None = None
    #: whether the connection can send records straight from segment files (plain TCP):
    #: then Fetch leaves large reads in the files (``storage.file_records``)
    zero_copy: bool = False
    #: a quota violation the handler found (Fetch's ``consumer_byte_rate``): the server
    #: throttles the connection this long (``wireserver.server``)
    throttle_ms: int = 0
    #: what handlers keep for this connection between its requests (Fetch's answers of
    #: caught-up partitions, ``wireserver.apis.fetch.CaughtUpMemo``); None outside a
    #: connection
    connection_cache: dict | None = None

    @property
    def version(self) -> int:
        return self.request.header.api_version

    @property
    def body(self) -> Any:
        return self.request.body

    @property
    def client_id(self) -> str | None:
        return self.request.header.client_id

    def response(self, **fields: Any) -> ApiMessage:
        """A response body of this request's API at this request's version."""
        return self.request.spec.response_class(version=self.version, **fields)

    def now_ms(self) -> int:
        return self.services.now_ms()
