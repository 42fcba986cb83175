"""Keep a serving process's long-lived objects out of the garbage collector's full collections.

A warm gateway holds ~150,000 tracked objects that live as long as the process: modules, the wiring,
pydantic's validators, the loaded catalogs. CPython's full (generation 2) collection walks all of them
and runs whenever enough request garbage has outlived the young generations: on a busy `foldgate
serve`, about once every 600 proxied calls, each time 0.1 to 0.2 s with the event loop stopped (0.2 to 0.3
ms of every call on average, and a stall in the tail of every call in flight at that moment).
``gc.freeze()`` moves everything alive into a permanent generation that collections skip; what
requests allocate afterwards is collected as before.

The cost: an object frozen here that later becomes garbage *in a reference cycle* is not reclaimed
(acyclic garbage is, by reference counting). So the heap is settled once, when the process has
built what it keeps (a Lambda's init, the local server's first index run), never per request or per
reindex.
"""

from __future__ import annotations

import gc

__all__ = ["settle_heap"]


def settle_heap(*, collect: bool = False) -> int:
    """Freeze every object alive now out of the collector's generations (after one full collection
    when ``collect``: a long-running process can afford it, a Lambda's init need not pay it); returns
    how many objects are frozen."""
    if collect:
        gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
