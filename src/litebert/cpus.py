"""How many CPUs this process may use: the default of every `--workers` option.

`os.cpu_count()` counts the machine's CPUs. A cluster job, a container or `taskset` often
grants fewer (CPU affinity, which cgroup cpusets set too); one worker per machine CPU then
oversubscribes the ones granted, each worker a Python process with its own imports.
"""

from __future__ import annotations

import os


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one), at least 1."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):  # no affinity masks here (macOS, Windows)
        return os.cpu_count() or 1
