"""Files, one helper per job: expanding inputs, opening (compressed) text, atomic writes, and
recording / checking what a directory holds (sizes and checksums).

Every module that reads user inputs or writes results goes through these functions, so the
rules are the same everywhere: `~`, absolute and relative globs and `**` work for every
command; `.gz` / `.bz2` / `.xz` are recognised whatever the case of the suffix, and a file
whose bytes are not what its name claims is an error naming it; nothing is ever left
half-written under its final name.
"""

from __future__ import annotations

import bz2
import contextlib
import errno
import glob
import gzip
import hashlib
import io
import json
import logging
import lzma
import os
import shutil
import socket
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

try:
    import fcntl
except ImportError:  # not POSIX: exclusive() runs its block unguarded
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("litebert")


class InputFileError(ValueError):
    """An input that is missing or not what its name says; the message names the file."""


class MissingInputError(InputFileError, FileNotFoundError):
    """An input path that does not exist, or a pattern that matches nothing."""


class DamagedInputError(InputFileError):
    """A compressed input whose data stops early or is corrupt (a partial copy, a bad disk)."""


# ---- input expansion ------------------------------------------------------------------------

def _has_magic(text: str) -> bool:
    return any(c in text for c in "*?[")


def _walk(root: Path, unit: Callable[[Path], bool] | None = None) -> Iterator[Path]:
    """Files under `root` in sorted order (a folder's files, then its folders), names starting
    with "." skipped; a folder that `unit` accepts is yielded whole instead of walked."""
    if unit is not None and unit(root):
        yield root
        return
    files, folders = [], []
    with os.scandir(root) as entries:
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if not entry.is_dir():
                files.append(entry.name)
            elif not entry.is_symlink():  # as os.walk: a linked folder is not followed
                folders.append(entry.name)
    yield from (root / name for name in sorted(files))
    for name in sorted(folders):
        yield from _walk(root / name, unit)


def expand_inputs(inputs: str | Path | Iterable[str | Path], what: str = "input",
                  unit: Callable[[Path], bool] | None = None) -> list[Path]:
    """Every file that `inputs` name, in a deterministic order, each once.

    An input is a file, a directory (walked recursively, sorted, hidden names skipped) or a
    glob pattern (absolute or relative, `**` matching any depth, sorted). `~` is expanded
    everywhere. A missing path or a pattern that matches nothing is an InputFileError naming it.
    A directory that `unit` accepts (a dataset saved as a folder of files) is one input: it is
    returned as it is, not walked.
    """
    if isinstance(inputs, (str, Path)):
        inputs = [inputs]
    files: list[Path] = []
    for item in inputs:
        text = os.path.expanduser(str(item))
        if _has_magic(text):
            matches = sorted(glob.glob(text, recursive=True))
            if not matches:
                raise MissingInputError(f"{what}: no file matches the pattern {str(item)!r}")
            paths = [Path(m) for m in matches]
        else:
            paths = [Path(text)]
        for path in paths:
            if path.is_dir():
                files.extend(_walk(path, unit))
            elif path.is_file():
                files.append(path)
            else:
                raise MissingInputError(f"{what}: {item}: no such file or directory")
    seen: set[Path] = set()
    return [f for f in files if not (f in seen or seen.add(f))]  # type: ignore[func-returns-value]


def named_yaml(name_or_path: str | Path, directory: Path) -> Path | None:
    """A YAML file given by path, or by the name of one shipped in `directory` (package data:
    recipes, studies); None when it is neither."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    shipped = directory / f"{name_or_path}.yaml"
    return shipped if str(name_or_path) in yaml_names(directory) else None


def yaml_names(directory: Path) -> list[str]:
    """The names of the YAML files shipped in `directory`, sorted."""
    return sorted(p.stem for p in directory.glob("*.yaml"))


# ---- compressed files -----------------------------------------------------------------------

# suffix -> (opener, magic bytes at the start of such a file, name of the format)
_COMPRESSION: dict[str, tuple[Callable[..., IO[Any]], bytes, str]] = {
    ".gz": (gzip.open, b"\x1f\x8b", "gzip"),
    ".bz2": (bz2.open, b"BZh", "bzip2"),
    ".xz": (lzma.open, b"\xfd7zXZ\x00", "xz"),
}
COMPRESSED_SUFFIXES = tuple(_COMPRESSION)


def compression_of(path: str | Path) -> str | None:
    """'.gz', '.bz2' or '.xz' when the name says so (any case), else None."""
    suffix = Path(path).suffix.lower()
    return suffix if suffix in _COMPRESSION else None


def strip_compression(name: str) -> str:
    """`train.JSONL.gz` -> `train.JSONL`: the name the decompressed content would have."""
    suffix = compression_of(name)
    return name[: -len(suffix)] if suffix else name


def open_bytes(path: str | Path) -> IO[bytes]:
    """A binary stream of the file's content, decompressed when its name says so.

    The first bytes are checked against the format: `corpus.txt.gz` that is not gzip data is
    an InputFileError naming the file, instead of a stream of garbage characters.
    """
    path = Path(path)
    suffix = compression_of(path)
    try:
        if suffix is None:
            return open(path, "rb", buffering=1 << 20)
        opener, magic, name = _COMPRESSION[suffix]
        with open(path, "rb") as raw:
            head = raw.read(len(magic))
        if head != magic:
            raise InputFileError(f"{path}: the name says {name} ({suffix}) but the file is not "
                                 f"{name} data; rename it or compress it properly")
        return io.BufferedReader(_Decompressed(opener(path, "rb"), path, name), 1 << 20)
    except FileNotFoundError:
        raise MissingInputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputFileError(f"{path}: is a directory, not a file") from None


# What gzip, bz2 and lzma raise for data cut short or corrupt (gzip.BadGzipFile is an OSError).
_DECOMPRESSION_ERRORS = (EOFError, OSError, zlib.error, lzma.LZMAError)


class _Decompressed(io.RawIOBase):
    """A decompressing stream whose read errors name the file: without it, a .gz cut short
    ends a tokenizer training or a fine-tuning run in gzip's own traceback, far from the
    file's name."""

    def __init__(self, stream: IO[bytes], path: Path, name: str):
        self._stream, self._path, self._name = stream, path, name

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        # read1, not readinto: it returns what one decompressed chunk holds, so the text before
        # the damage reaches the reader (the corpus reader keeps it) before the error does.
        try:
            data = self._stream.read1(len(buffer))  # type: ignore[attr-defined]
        except _DECOMPRESSION_ERRORS as err:
            raise DamagedInputError(f"{self._path}: damaged {self._name} data ({err}); the file "
                                    "is cut short or corrupt: copy or compress it again") from None
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        self._stream.close()
        super().close()


def open_text(path: str | Path, errors: str = "strict") -> io.TextIOWrapper:
    """open_bytes decoded as UTF-8 (`errors` as for open(): 'strict', 'replace', ...)."""
    return io.TextIOWrapper(open_bytes(path), encoding="utf-8", errors=errors)


def read_text(path: str | Path) -> str:
    """The whole (maybe compressed) file as UTF-8 text; bad UTF-8 is an error naming it."""
    with open_bytes(path) as f:
        data = f.read()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputFileError(f"{path}: not UTF-8 text (byte {err.start}: {err.reason})") from None


# ---- atomic writes --------------------------------------------------------------------------

def temporary_name(path: Path) -> Path:
    """Where a file is written before it is renamed to `path`: hidden, same directory."""
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


def is_temporary(path: Path) -> bool:
    """A leftover of an interrupted atomic write."""
    return path.name.startswith(".") and ".tmp-" in path.name


class AtomicFile:
    """A file written under a temporary name in its directory and renamed into place by
    `commit()`, so that `path` is either absent/old or complete, never half-written.

    For streams of appends (data building); `atomic_write` is the one-shot form. A write or
    commit that fails removes the temporary (on a full disk it holds the space others need)
    and raises the OSError with `filename` set to `path`, the name a user knows.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = temporary_name(self.path)
        with _named(self.path):
            self.file: IO[bytes] = open(self.tmp, "wb")  # noqa: SIM115 (closed in commit/discard)

    def write(self, data: bytes) -> None:
        try:
            self.file.write(data)
        except OSError as err:
            self.discard()
            err.filename = str(self.path)
            raise

    def commit(self) -> Path:
        try:
            self.file.close()  # flushes the buffer: a full disk can show here
            _fsync(self.tmp)
            os.replace(self.tmp, self.path)
        except OSError as err:
            self.discard()
            err.filename = str(self.path)
            raise
        return self.path

    def discard(self) -> None:
        with contextlib.suppress(OSError):  # flushing what is left fails again on a full disk
            self.file.close()
        self.tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def _named(path: Path) -> Iterator[None]:
    """An OSError from the block names `path` (not the temporary it was written under)."""
    try:
        yield
    except OSError as err:
        err.filename = str(path)
        raise


# The process's umask, read once: os.umask can only be read by setting it.
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def follow_umask(path: str | Path) -> None:
    """Give `path` the mode a plain `open()` would (0666 less the umask). safetensors writes
    its files 0600, which leaves a model unreadable by the colleagues of a shared cluster."""
    os.chmod(path, 0o666 & ~_UMASK)


def atomic_write(path: str | Path, content: bytes | str | Callable[[Path], Any]) -> Path:
    """Write `path` atomically (see AtomicFile). `content` is bytes, text (UTF-8), or a
    function that writes a file at the path it is given (e.g. safetensors' save_file). An
    OSError names `path`; the temporary is removed whatever happens."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_name(path)
    try:
        with _named(path):
            if callable(content):
                content(tmp)
                follow_umask(tmp)  # the writer may have chosen a mode of its own
            else:
                tmp.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
            _fsync(tmp)
            os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def atomic_write_json(path: str | Path, data: Any) -> Path:
    """JSON, indented and key-sorted, atomically."""
    return atomic_write(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


@contextlib.contextmanager
def atomic_directory(path: str | Path) -> Iterator[Path]:
    """`with atomic_directory(final) as tmp:` fill `tmp`; on success it becomes `final`.

    `tmp` is `final` + ".tmp" (cleared first). An existing `final` is replaced only once the
    new one is complete; if the block raises, `tmp` is removed and `final` is untouched.
    """
    final = Path(path)
    tmp = final.with_name(final.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        yield tmp
        for child in tmp.iterdir():
            _fsync(child)
        _fsync(tmp)
        if final.exists():
            old = final.with_name(final.name + ".old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(final, old)
            os.replace(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, final)
        _fsync(final.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextlib.contextmanager
def exclusive(path: str | Path, what: str) -> Iterator[None]:
    """Hold an exclusive lock on the lock file `path` (created beside the work it guards) for
    the block: two processes writing the same directory (two `study run --only` on one
    machine, say) take turns instead of deleting each other's temporaries. Waiting is said
    in the log. POSIX advisory locks (flock); on a filesystem without them (Lustre mounted
    without flock, NFS without a lock daemon) a lock file created with O_EXCL instead
    (`path` + ".excl", see _lock_file). Not POSIX at all: the block runs unguarded."""
    if fcntl is None:
        yield
        return
    lock = Path(path)
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a+b") as handle:
        if _flock(handle, what):
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
            return
    with _lock_file(lock.with_name(lock.name + ".excl"), what):
        yield


# What flock raises where the filesystem has no such locks (rather than "held by another").
_NO_FLOCK = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}
LOCK_POLL_SECONDS = 1.0  # how often a waiter looks whether an O_EXCL lock file is gone


def _flock(handle: IO[bytes], what: str) -> bool:
    """Take flock on `handle`, waiting (said in the log) while another process holds it;
    False when the filesystem has no flock at all."""
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        log.info("%s: another process is writing it; waiting", what)
        fcntl.flock(handle, fcntl.LOCK_EX)
    except OSError as err:
        if err.errno not in _NO_FLOCK:
            raise
        log.debug("%s: no flock on this filesystem (%s); using a lock file", what, err)
        return False
    return True


@contextlib.contextmanager
def _lock_file(path: Path, what: str) -> Iterator[None]:
    """Hold `path`, created with O_CREAT | O_EXCL (atomic on every filesystem, NFS included)
    and holding "HOST PID", for the block; removed after it. While another process holds
    it, wait (said once in the log). A lock left by a dead process on this host is taken
    over (said in the log); one from another host cannot be checked, so it is waited for,
    and the log names it so that a user can delete it."""
    said = False
    while True:
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            break
        except FileExistsError:
            holder, inode = _lock_holder(path)
            if holder is not None and _is_stale(holder):
                log.warning("%s: taking over the lock %s, left by process %s on this host, "
                            "which has ended", what, path, holder[1])
                _remove_if_same(path, inode)
                continue
            if not said:
                log.info("%s: another process (%s) is writing it; waiting for the lock file %s "
                         "to go", what, " ".join(map(str, holder or ("unknown",))), path)
                said = True
            time.sleep(LOCK_POLL_SECONDS)
    try:
        os.write(fd, f"{socket.gethostname()} {os.getpid()}\n".encode())
        os.close(fd)
        yield
    finally:
        path.unlink(missing_ok=True)


def _lock_holder(path: Path) -> tuple[tuple[str, int] | None, int | None]:
    """((host, pid) written in lock file `path`, or None while it is being written or is
    unreadable; its inode, or None when it is gone already)."""
    inode = None
    try:
        inode = path.stat().st_ino
        host, pid = path.read_text(encoding="utf-8").split()
        return (host, int(pid)), inode
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError):  # empty (its holder is writing it) or not ours
        return None, inode


def _is_stale(holder: tuple[str, int]) -> bool:
    """Whether `holder` is a process of this host that has ended."""
    if holder[0] != socket.gethostname():
        return False
    try:
        os.kill(holder[1], 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return True
    except PermissionError:  # exists, another user's
        return False
    return False


def _remove_if_same(path: Path, inode: int | None) -> None:
    """Remove the stale lock `path` unless another waiter replaced it since it was read (a
    different inode). Two waiters taking over at the same instant can still race in the
    moment between the check and the removal; the cost is two writers, as without a lock."""
    with contextlib.suppress(FileNotFoundError):
        if path.stat().st_ino == inode:
            path.unlink()


def _fsync(path: Path) -> None:
    """Flush a file (or a directory entry) to disk; best effort where the OS refuses."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ---- what a directory holds: sizes and checksums --------------------------------------------

def file_digest(path: str | Path, chunk: int = 1 << 22) -> dict[str, Any]:
    """{'size': bytes, 'sha256': hex digest} of one file, read in chunks (flat memory)."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
            size += len(block)
    return {"size": size, "sha256": h.hexdigest()}


def describe_files(directory: str | Path, names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """{name: file_digest} for files of `directory`, to be stored in its manifest."""
    directory = Path(directory)
    return {name: file_digest(directory / name) for name in sorted(names)}


def damaged_files(directory: str | Path, recorded: dict[str, dict[str, Any]],
                  checksums: bool) -> list[str]:
    """One "name: what is wrong" line per file that differs from its record.

    Sizes are always compared (cheap: a copy cut short shows at once); with `checksums`
    every byte is read and hashed too.
    """
    directory = Path(directory)
    problems = []
    for name, expected in sorted(recorded.items()):
        path = directory / name
        if not path.is_file():
            problems.append(f"{path}: missing")
            continue
        size = path.stat().st_size
        if size != expected["size"]:
            problems.append(f"{path}: {size:,} bytes, the manifest records "
                            f"{expected['size']:,} (cut short or overwritten)")
        elif checksums and file_digest(path)["sha256"] != expected["sha256"]:
            problems.append(f"{path}: sha256 differs from the manifest (the content changed)")
    return problems
