"""Handing freed C heap back to the operating system (glibc's ``malloc_trim``).

Python frees memory into the C allocator, which keeps it for reuse; after a burst of temporary
allocations the broker's resident size stays where the burst left it. Two such bursts are
one-off: start-up (imports, log recovery) and the first request of each API version, when
kafka-python generates and compiles that version's decoder and encoder (the compiler's
temporary memory is some megabytes for the larger messages). After each, the broker returns
the free pages: at start-up before serving, and after the first response of a new
(API key, version). That is a bounded number of calls, about a millisecond each.
Where the C library has no ``malloc_trim`` (not glibc) nothing is done.
"""

from __future__ import annotations

from typing import Any

_trim: Any = None
_first_uses: set[tuple[int, int]] = set()


def release_free_heap() -> None:
    """Return the C heap's free pages to the operating system, if the C library can."""
    global _trim
    if _trim is None:
        import ctypes

        try:
            _trim = ctypes.CDLL(None).malloc_trim  # the process's own symbols, libc's among them
        except (OSError, AttributeError):
            _trim = False
    if _trim:
        _trim(0)


def after_response(api_key: int, version: int, reactor: Any) -> None:
    """Called after each response is encoded: the first time an (API key, version) has been
    decoded and encoded, release the compiler's leftovers once the reactor is free."""
    if (api_key, version) not in _first_uses:
        _first_uses.add((api_key, version))
        reactor.callLater(0, release_free_heap)
