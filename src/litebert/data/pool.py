"""`ordered_map`: a function over a stream of tasks in a process pool, results in task order,
with a bounded number in flight. Both passes of `litebert data build` use it.

Starting a pool costs its workers an import of litebert (torch among it), a second or more
each; pass 2 runs several maps (a writer and the static masks of each split), so within
`shared_pools()` the maps without an initializer share one pool per worker count."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
from collections import deque
from collections.abc import Iterable, Iterator
from multiprocessing.pool import Pool

_SHARED: dict[int, Pool] | None = None  # the pools of the open shared_pools(), by size


def ordered_map(fn, tasks: Iterable, workers: int, initializer=None, initargs=(),
                recycle_after: int | None = None):
    """fn over tasks, results in task order; with workers > 1 in a process pool with at most
    2 tasks per worker in flight, so a long task stream never piles up in memory.
    recycle_after: each worker is replaced by a fresh one after that many tasks (None:
    never). Long tasks that allocate much (pass 1's parts) leave a worker's heap at its
    high-water mark, fragmented; at 5 GB of text the workers of one pool ended 12 MB above
    their size at 50 MB, and a fresh process every few dozen parts keeps them flat."""
    if workers <= 1:
        if initializer:
            initializer(*initargs)
        for task in tasks:
            yield fn(*task)
        return
    if initializer is None and _SHARED is not None:
        if workers not in _SHARED:
            _SHARED[workers] = _new_pool(workers)
        yield from _in_order(_SHARED[workers], fn, tasks, workers)
        return
    with _new_pool(workers, initializer, initargs, recycle_after) as pool:
        yield from _in_order(pool, fn, tasks, workers)


@contextlib.contextmanager
def shared_pools() -> Iterator[None]:
    """Within, ordered_map without an initializer reuses one pool per worker count; the
    pools end with the outermost `with` (an inner one changes nothing)."""
    global _SHARED
    if _SHARED is not None:
        yield
        return
    _SHARED = {}
    try:
        yield
    finally:
        pools, _SHARED = _SHARED, None
        for pool in pools.values():
            pool.terminate()  # every result was taken, or the caller gave up on them


def _new_pool(workers: int, initializer=None, initargs=(),
              recycle_after: int | None = None) -> Pool:
    ctx = mp.get_context("spawn")  # fork + sentencepiece/torch threads is not safe
    return ctx.Pool(workers, initializer=initializer, initargs=initargs,
                    maxtasksperchild=recycle_after)


def _in_order(pool: Pool, fn, tasks: Iterable, workers: int) -> Iterator:
    pending: deque = deque()
    for task in tasks:
        pending.append(pool.apply_async(fn, task))
        if len(pending) >= 2 * workers:
            yield pending.popleft().get()
    while pending:
        yield pending.popleft().get()
