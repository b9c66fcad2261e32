"""Writes that fail (a full disk, a used-up quota, an I/O error) as one sentence to act on.

Without this, a full disk ends a run in whatever the writing library raises (safetensors'
SafetensorError, torch's "unexpected pos" RuntimeError, DCP's CheckpointException), far from
what was being written and what to do next. `explained_write` wraps a write and turns any of
those into a WriteFailed whose message names the path, what was being written, the space it
needs and the space free (or the errno's meaning), and what to do next. The CLI prints it as
`litebert CMD: error: ...`.

Under torchrun a write that fails on one rank must not leave the others waiting in the next
collective: with `agree=litebert.distributed.agree_on_write` every rank gathers every rank's
outcome when the block ends and, if any failed, all raise the same sentence. (The agreement
is passed in, not imported: this module serves the data build's workers too, which must not
import torch.)
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

from safetensors import SafetensorError

# Errors meaning "not enough room": the disk itself, or the user's share of it.
SPACE_ERRORS = {errno.ENOSPC: "no space left on the device",
                errno.EDQUOT: "the disk quota is used up"}

# safetensors reports the OS error only inside its text: "... I/O error: ... (os error 28)".
_SAFETENSORS_OS_ERROR = re.compile(r"\(os error (\d+)\)")
# torch.save's C++ writer drops the OS error and says only that the file came out short.
_TORCH_WRITER_FAILED = ("unexpected pos", "PytorchStreamWriter failed", "file write failed")

# What a caller may give for the space needed: bytes (said as "about N"), a phrase used as it
# is ("more than N"), or a function computing either once a write has failed (it may read the
# disk, which the successful path should not pay for).
Needed = int | str | None
Advice = str | Callable[[], str]


class WriteFailed(OSError):
    """A write that failed; the message is the whole explanation (path, what, space, next
    step). `errno` is the underlying error's (None when the library hid it); `agreed` is
    True once every rank of a process group raises this same one."""

    def __init__(self, message: str, code: int | None, agreed: bool = False) -> None:
        super().__init__(message)
        self.errno = code  # OSError's field; None when the library hid it
        self.agreed = agreed


# Every rank's outcome of a write -> the one all raise (None: all went well).
Agreement = Callable[["WriteFailed | None"], "WriteFailed | None"]


def free_bytes(path: str | Path) -> int | None:
    """Bytes free to this user on the filesystem of `path`, or of its nearest existing parent
    (the path itself is often what failed to appear); None when even that cannot be read."""
    here = Path(path).absolute()
    for candidate in (here, *here.parents):
        if candidate.exists():
            try:
                return shutil.disk_usage(candidate).free
            except OSError:
                return None
    return None


def human_size(size: int) -> str:
    """1536 -> "1.5 KiB"; bytes below 1 KiB as they are."""
    value = float(size)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{size:,} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def tree_size(path: str | Path | None) -> int:
    """Bytes in the files under `path` (a file or a directory); 0 for None or nothing there."""
    if path is None or not Path(path).exists():
        return 0
    root = Path(path)
    files = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files)


def as_os_error(err: BaseException) -> OSError | None:
    """The OS-level failure behind `err`, or None when `err` is not a failed write.

    SafetensorError and DCP's CheckpointException carry it inside; torch.save's RuntimeError
    has lost it, so it becomes an OSError without errno whose text is torch's."""
    if isinstance(err, OSError):
        return err
    if isinstance(err, SafetensorError):
        found = _SAFETENSORS_OS_ERROR.search(str(err))
        if found:
            code = int(found.group(1))
            return OSError(code, os.strerror(code))
        return None
    if isinstance(err, RuntimeError) and any(s in str(err) for s in _TORCH_WRITER_FAILED):
        return OSError(f"torch's file writer stopped short ({str(err).splitlines()[0]})")
    failures = getattr(err, "failures", None)  # DCP's CheckpointException (not imported:
    if isinstance(failures, dict):               # that costs a second): {rank: (error, trace)}
        for failure in failures.values():
            inner = failure[0] if isinstance(failure, tuple) else failure
            found_error = as_os_error(inner) if isinstance(inner, BaseException) else None
            if found_error is not None:
                return found_error
    return None


def explain(err: OSError, path: str | Path, what: str, needed: Needed | Callable[[], Needed],
            after: Advice) -> str:
    """The sentence for a write of `what` at `path` that failed with `err`."""
    failed = Path(err.filename).name if err.filename else None
    if failed and not failed.startswith(Path(path).name):  # not `path` or its `.tmp` twin
        what = f"{what}'s {failed}"  # the one file of several that failed
    free = free_bytes(path)
    said_free = "how much is free is unknown" if free is None else f"{human_size(free)} free"
    if err.errno in SPACE_ERRORS:
        need = needed() if callable(needed) else needed
        if isinstance(need, int):
            need = f"about {human_size(need)}"
        said_need = f"it needs {need}, " if need else ""
        reason = f"{SPACE_ERRORS[err.errno]} ({said_need}{said_free} there)"
    elif err.errno is not None:
        name = errno.errorcode.get(err.errno, f"errno {err.errno}")
        reason = f"{err.strerror or os.strerror(err.errno)} ({name}; {said_free} there)"
    else:
        reason = f"{err} ({said_free} there)"
    advice = after() if callable(after) else after
    return f"could not write {what} to {path}: {reason}; {advice}"


@contextlib.contextmanager
def explained_write(path: str | Path, what: str, *,
                    needed: Needed | Callable[[], Needed] = None,
                    after: Advice = "free some space, then run it again",
                    agree: Agreement | None = None) -> Iterator[None]:
    """Run the block; a failed write in it (see as_os_error) becomes a WriteFailed naming
    `path` and `what`, with `needed` and `after` (computed only then when callables).

    agree (litebert.distributed.agree_on_write): every rank of the process group must enter
    and leave this block at the same point; they agree on the outcome when it ends (one
    all_gather, also when all went well) and every rank raises the first failing rank's
    sentence. A WriteFailed that ranks agreed on already (a nested block's) passes through
    without another gathering.
    """
    try:
        yield
    except BaseException as err:
        if isinstance(err, WriteFailed) and (err.agreed or agree is None):
            raise
        found = err if isinstance(err, WriteFailed) else as_os_error(err)
        if found is None:
            raise
        mine = found if isinstance(found, WriteFailed) else WriteFailed(
            explain(found, path, what, needed, after), found.errno)
        raise ((agree(mine) or mine) if agree else mine) from err
    if agree:
        failed = agree(None)
        if failed is not None:
            raise failed
