"""`ordered_map`: a function over a stream of tasks in a process pool, results in task order,
with a bounded number in flight. Both passes of `litebert data build` use it."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable


def ordered_map(fn, tasks: Iterable, workers: int, initializer=None, initargs=()):
    """fn over tasks, results in task order; with workers > 1 in a process pool with at most
    2 tasks per worker in flight, so a long task stream never piles up in memory."""
    if workers <= 1:
        if initializer:
            initializer(*initargs)
        for task in tasks:
            yield fn(*task)
        return
    import multiprocessing as mp

    ctx = mp.get_context("spawn")  # fork + sentencepiece/torch threads is not safe
    with ctx.Pool(workers, initializer=initializer, initargs=initargs) as pool:
        pending: deque = deque()
        for task in tasks:
            pending.append(pool.apply_async(fn, task))
            if len(pending) >= 2 * workers:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()
