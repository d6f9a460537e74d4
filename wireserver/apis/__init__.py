"""One module per API; each registers its handler here with ``@handles(key)``.

The version ranges live in ``protocol.served`` (the single table ApiVersions is built from).
Each served API's handler is in the module named after it (``DescribeUserScramCredentials``
in ``describe_user_scram_credentials.py``), imported when the first request of that API
arrives: an idle broker does not carry the code of the forty-odd APIs nobody has called yet.
``check_handlers`` still refuses, at start, a server whose handler modules and served table
disagree (it looks for the files without importing them), and registering a key twice raises.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from wireserver.protocol.registry import ApiRegistry, DuplicateApi

if TYPE_CHECKING:
    from wireserver.protocol.registry import ApiSpec

#: What a handler returns: the response body, None for no response (acks=0 Produce), or a
#: Deferred that fires with either (``wireserver.server`` takes each through maybeDeferred).
HandlerResult = Any
Handler = Callable[[Any], HandlerResult]
HANDLERS: dict[int, Handler] = {}


def handles(api_key: int) -> Callable[[Handler], Handler]:
    def register(func: Handler) -> Handler:
        if api_key in HANDLERS:
            raise DuplicateApi(f"a handler for API key {api_key} is already registered")
        HANDLERS[api_key] = func
        return func

    return register


def module_name(api_name: str) -> str:
    """``DescribeUserScramCredentials`` -> ``describe_user_scram_credentials``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", api_name).lower()


def handler_for(spec: ApiSpec) -> Handler:
    """The handler of ``spec``'s API, importing its module the first time."""
    handler = HANDLERS.get(spec.key)
    if handler is None:
        name = module_name(spec.name)
        importlib.import_module(f"{__name__}.{name}")
        handler = HANDLERS.get(spec.key)
        if handler is None:
            raise RuntimeError(f"wireserver/apis/{name}.py does not handle API key {spec.key}")
    return handler


def handler_modules() -> set[str]:
    """The names of the handler modules in this package (found, not imported)."""
    return {module.name for module in pkgutil.iter_modules(__path__)}


def load_all(registry: ApiRegistry) -> None:
    """Import the handler of every API in ``registry`` (for tests and tools)."""
    for spec in registry:
        handler_for(spec)


def check_handlers(registry: ApiRegistry) -> None:
    served = {module_name(spec.name) for spec in registry}
    found = handler_modules()
    missing = served - found
    extra = found - served
    if missing or extra:
        raise RuntimeError(
            f"handlers and served APIs disagree: no handler module for "
            f"{sorted(missing)}, handler module but not served: {sorted(extra)}"
        )
