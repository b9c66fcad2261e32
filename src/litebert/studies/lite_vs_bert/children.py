"""Where the study's child processes come from: multiprocessing's fork server.

An activation measurement needs a process of its own (its peak memory must be its own), and
so does each gloo rank. A freshly spawned interpreter gives that, but spends about 3 s of a
2-core machine's CPU importing torch and litebert before it measures anything, and the quick
study alone starts some twenty. The fork server is one fresh interpreter, started with the
first child, that imports the modules the children run (named by the caller) once; every
child is forked from it. A child still holds nothing of its parent's heap and no thread of it
(the server has run no torch op, so it has no thread pool to fork), and starts in
milliseconds.

The server's imports are fixed when it starts; a module named later is imported by each child
that needs it, as a spawned child would. A child inherits the server's working directory and
environment as they were when the first child started, so the study hands its children
everything as arguments (ports, paths, shapes), never through the environment. Where a
platform has no fork server, children are spawned.
"""

from __future__ import annotations

import multiprocessing as mp
from multiprocessing.context import ForkServerContext, SpawnContext

# Every module named so far: the server imports them when it starts. dynamo is named first:
# torch imports it when an optimizer is made or a model is built under a device context, and
# a child would otherwise pay that import itself where the named modules do not import it
# (measured so: the quick study took 40 s rather than 16 s).
_PRELOAD: list[str] = ["torch._dynamo"]


def start_method() -> str:
    """"forkserver" where the platform has one, else "spawn"."""
    return "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"


def child_context(*modules: str) -> ForkServerContext | SpawnContext:
    """The context to start children in, with `modules` (those of the functions the children
    run) added to what the server imports."""
    if start_method() == "spawn":
        return mp.get_context("spawn")
    context = mp.get_context("forkserver")
    _PRELOAD.extend(m for m in modules if m not in _PRELOAD)
    context.set_forkserver_preload(list(_PRELOAD))
    return context
