"""The table of APIs wireserver serves: per API key, the version range and the kafka-python
message classes that decode its requests and encode its responses.

This is the single source of truth for ApiVersions. Registering a key twice is an error, so a
second handler for the same API cannot slip in unnoticed.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafka.protocol.api_message import ApiMessage


#: ``first_flexible_version`` of an API without flexible versions
NEVER_FLEXIBLE = 1 << 15


class DuplicateApi(ValueError):
    """An API key registered a second time."""


@dataclass(frozen=True)
class ApiSpec:
    """One API key we serve.

    ``min_version``/``max_version`` are the versions we decode and answer. ``advertised_min``
    is what ApiVersions reports as the minimum; it is lower than ``min_version`` only where
    Kafka itself advertises versions it no longer accepts (Produce v0-2, KAFKA-18659).

    The message classes (``<name>Request``/``<name>Response`` in ``module``) are imported the
    first time a request of this API needs them: kafka-python builds each class from its JSON
    schema when its module is imported, and a broker that loaded all of them at start would
    carry several megabytes for APIs nobody calls. ApiVersions needs only the numbers above.
    """

    key: int
    name: str
    min_version: int
    max_version: int
    module: str
    advertised_min: int

    @cached_property
    def request_class(self) -> type[ApiMessage]:
        return self._message_class("Request")

    @cached_property
    def response_class(self) -> type[ApiMessage]:
        return self._message_class("Response")

    def _message_class(self, kind: str) -> type[ApiMessage]:
        cls = getattr(importlib.import_module(self.module), self.name + kind)
        if cls.API_KEY != self.key:
            raise ValueError(f"{cls.name} has API key {cls.API_KEY}, registered as {self.key}")
        if self.max_version > cls.max_version:
            raise ValueError(
                f"{cls.name}: versions {self.min_version}-{self.max_version} are "
                f"outside what the message class knows (max {cls.max_version})"
            )
        return cls

    @cached_property
    def first_flexible_version(self) -> int:
        """The first flexible version (KIP-482: compact encodings and tagged fields), past
        every version when the API has none; read from the message class once, as each
        request asks it twice (its header's version, its response header's)."""
        first = self.request_class._flexible_versions
        return first[0] if first is not None and first[0] >= 0 else NEVER_FLEXIBLE

    def serves(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def is_flexible(self, version: int) -> bool:
        """The range of flexible versions is open-ended, so a version newer than we know is
        flexible too: that is how a client's ApiVersions request at a version we don't serve
        still has a parsable header."""
        return version >= self.first_flexible_version

    def request_header_version(self, version: int) -> int:
        return 2 if version >= self.first_flexible_version else 1

    def response_header_version(self, version: int) -> int:
        if self.key == 18:  # ApiVersions: always header v0, so any client can read it
            return 0
        return 1 if version >= self.first_flexible_version else 0


class ApiRegistry:
    """API key → ApiSpec."""

    def __init__(self) -> None:
        self._specs: dict[int, ApiSpec] = {}

    def register(
        self,
        key: int,
        name: str,
        module: str,
        min_version: int,
        max_version: int,
        *,
        advertised_min: int | None = None,
    ) -> ApiSpec:
        """Serve API ``key``, whose classes are ``<name>Request``/``<name>Response`` in
        ``module``, at versions ``min_version``..``max_version``."""
        if key in self._specs:
            raise DuplicateApi(f"API key {key} ({name}) is already registered")
        if not 0 <= min_version <= max_version:
            raise ValueError(f"{name}: bad version range {min_version}-{max_version}")
        spec = ApiSpec(
            key,
            name,
            min_version,
            max_version,
            module,
            min_version if advertised_min is None else advertised_min,
        )
        self._specs[key] = spec
        return spec

    def get(self, key: int) -> ApiSpec | None:
        return self._specs.get(key)

    def __contains__(self, key: int) -> bool:
        return key in self._specs

    def __iter__(self) -> Iterator[ApiSpec]:
        return iter(sorted(self._specs.values(), key=lambda spec: spec.key))

    def __len__(self) -> int:
        return len(self._specs)
