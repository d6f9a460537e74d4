"""One module per API; each registers its handler here with ``@handles(key)``.

The version ranges live in ``protocol.served`` (the single table ApiVersions is built from);
this package maps each served key to its handler, and ``check_handlers`` refuses a server
whose handlers and served table disagree. Registering a key twice raises.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Callable

from protocol.registry import ApiRegistry, DuplicateApi

Handler = Callable[[Any], Any]
HANDLERS: dict[int, Handler] = {}


def handles(api_key: int) -> Callable[[Handler], Handler]:
    def register(func: Handler) -> Handler:
        if api_key in HANDLERS:
            raise DuplicateApi(f"a handler for API key {api_key} is already registered")
        HANDLERS[api_key] = func
        return func
    return register


def load_all() -> None:
    """Import every handler module in this package."""
    for module in pkgutil.iter_modules(__path__, __name__ + "."):
        importlib.import_module(module.name)


def check_handlers(registry: ApiRegistry) -> None:
    served = {spec.key for spec in registry}
    missing = served - HANDLERS.keys()
    extra = HANDLERS.keys() - served
    if missing or extra:
        raise RuntimeError(f"handlers and served APIs disagree: no handler for {sorted(missing)}, "
                           f"handler but not served: {sorted(extra)}")


load_all()
