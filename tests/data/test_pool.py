"""ordered_map: results in task order, from a pool whose workers can be replaced."""

import os

from litebert.data.pool import ordered_map


def square_and_pid(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def test_results_keep_task_order_and_recycled_workers_are_fresh_processes():
    tasks = [(x,) for x in range(8)]
    kept = list(ordered_map(square_and_pid, tasks, 2))
    recycled = list(ordered_map(square_and_pid, tasks, 2, recycle_after=1))
    assert [r for r, _ in kept] == [r for r, _ in recycled] == [x * x for x in range(8)]
    assert len({pid for _, pid in kept}) <= 2
    assert len({pid for _, pid in recycled}) == 8  # one fresh worker per task
