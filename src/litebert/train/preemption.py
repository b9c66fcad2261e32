"""Preemption: SIGTERM, SIGUSR1 or Ctrl-C (SIGINT) ends a run at a step boundary, with a
checkpoint there.

A scheduler that reclaims the machines (Slurm's `--signal`, a cluster's preemption, a
Kubernetes eviction) sends SIGTERM or SIGUSR1 some time before it kills; a user at the
terminal presses Ctrl-C. The first signal only raises a flag; the loop finishes the
optimizer step it is in, every rank agrees on the step to stop after, the checkpoint is
written there and the process exits with status 128 + the signal's number (143 for
SIGTERM, 138 for SIGUSR1, 130 for SIGINT): the shell's "killed by a signal", which
Kubernetes' ExitCode restart policy and a job script's requeue both read as "try again".
Running the same command again continues from that checkpoint.

A second signal exits at once (same status; the checkpoint in writing is never made
visible, the previous one stays intact). A copy of the first signal that arrives within
`ECHO_SECONDS` is not a second one: under torchrun the scheduler often signals the worker
and torchrun forwards the same signal to it a moment later, and a Ctrl-C reaches the
workers both from the terminal and from torchrun. Outside torchrun nothing forwards a
Ctrl-C, so a second one within that time is the user's and stops at once.

The ranks agree without a host sync in the step: each step starts a non-blocking
all-reduce (max) of its flag on a gloo group and reads the one started a step before, so
every rank decides on the same step, one step after the first rank saw the signal.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType

import torch
import torch.distributed as dist

from litebert.distributed import DistInfo
from litebert.train import checkpoint

log = logging.getLogger("litebert")

SIGNALS = (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT)
ECHO_SECONDS = 2.0  # a repeat within this long is the same preemption, forwarded
# Set by torchrun in its workers: a launcher that forwards the signals it receives.
LAUNCHER_ENV = "TORCHELASTIC_RUN_ID"


def exit_status(signum: int) -> int:
    """The status a preempted run exits with: the shell's convention for a signal."""
    return 128 + signum


def signal_name(signum: int) -> str:
    """SIGTERM, SIGUSR1, or "SIGINT (Ctrl-C)": what the user knows it by."""
    name = signal.Signals(signum).name
    return f"{name} (Ctrl-C)" if signum == signal.SIGINT else name


def again(signum: int) -> str:
    """How the user asks to stop at once: the same key or signal once more."""
    return "a second Ctrl-C" if signum == signal.SIGINT else "a second signal"


class Preempted(Exception):
    """Raised by the loop once it has saved after a preemption signal; `status` is what the
    process should exit with, the message says where the run can continue from."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


def interrupted(run_dir: str | Path) -> Preempted:
    """A Ctrl-C outside the loop's watch (start-up, the final export), as the Preempted the
    CLI reports: where the same command goes on from, and Ctrl-C's status."""
    newest = checkpoint.latest(Path(run_dir))
    status = exit_status(signal.SIGINT)
    if newest is None:
        return Preempted(f"interrupted by Ctrl-C before the run's first checkpoint; the same "
                         f"command starts it again (exit status {status})", status)
    return Preempted(f"interrupted by Ctrl-C outside the training steps; the same command "
                     f"continues from {newest} (exit status {status})", status)


class PreemptionWatch:
    """Installs the handlers for the run (`with PreemptionWatch(info) as watch:`) and
    answers `watch.stop_now()` once per step, the same on every rank."""

    def __init__(self, info: DistInfo):
        self.info = info
        self.signum: int | None = None  # the first signal seen
        self.first_at = 0.0
        self.previous: dict[int, object] = {}
        self.group = None
        self.pending: tuple[dist.Work, torch.Tensor] | None = None

    def __enter__(self) -> PreemptionWatch:
        if dist.is_initialized():  # a gloo group of its own: CPU flags, no device sync
            self.group = dist.new_group(backend="gloo")
        if threading.current_thread() is threading.main_thread():  # else Python refuses
            for sig in SIGNALS:
                self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        if self.pending is not None:  # every rank started the same all-reduces: finish them
            self.pending[0].wait()
            self.pending = None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum, self.first_at = signum, time.monotonic()
            if self.info.is_main:
                log.warning("%s: finishing this step, then saving a checkpoint and stopping "
                            "(%s stops at once)", signal_name(signum), again(signum))
        elif not self._echo(signum):
            sys.stderr.write(f"litebert: a second {signal_name(signum)}: stopping now, "
                             f"without a checkpoint at this step\n")
            sys.stderr.flush()
            os._exit(exit_status(self.signum))  # nothing may wait: not even a collective

    def _echo(self, signum: int) -> bool:
        """Whether a repeat is the first signal delivered again (see the module docstring):
        a Ctrl-C is forwarded only under torchrun, a scheduler's signals anywhere."""
        if signum == signal.SIGINT and LAUNCHER_ENV not in os.environ:
            return False
        return time.monotonic() - self.first_at <= ECHO_SECONDS

    def stop_now(self) -> int | None:
        """The signal to stop for after this step, or None to go on; a collective (every
        rank calls it once per step)."""
        if self.group is None:
            return self.signum
        mine = torch.tensor([self.signum or 0], dtype=torch.int64)
        agreed = None
        if self.pending is not None:  # started a step ago: long done but for a straggler
            work, flags = self.pending
            work.wait()
            agreed = int(flags.item()) or None
        work = dist.all_reduce(mine, op=dist.ReduceOp.MAX, group=self.group, async_op=True)
        self.pending = (work, mine)
        return agreed
