"""write_errors: a failed write as one sentence (path, what, space needed and free, what next)."""

from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess
import sys

import pytest
import torch
from safetensors import SafetensorError

from litebert.train.checkpoint import save_pt
from litebert.write_errors import WriteFailed, as_os_error, explained_write, free_bytes

ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_names_path_what_space_and_advice(tmp_path):
    target = tmp_path / "missing" / "deeper" / "model.bin"  # free space from the parent there
    with pytest.raises(WriteFailed) as caught, explained_write(
            target, "the thing", needed=3 * 1024 ** 2, after="do this next"):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    message = str(caught.value)
    assert message.startswith(f"could not write the thing to {target}: no space left on the "
                              f"device (it needs about 3.0 MiB, ")
    said = re.search(r", ([\d.]+) (KiB|MiB|GiB|TiB) free there\); do this next$", message)
    assert said, message
    free = float(said.group(1)) * 1024 ** ("KMGT".index(said.group(2)[0]) + 1)
    assert free == pytest.approx(shutil.disk_usage(tmp_path).free, rel=0.05)  # others write too
    assert caught.value.errno == errno.ENOSPC and "\n" not in message


def test_a_quota_and_an_io_error_say_which(tmp_path):
    with pytest.raises(WriteFailed, match="the disk quota is used up"), \
            explained_write(tmp_path / "f", "x"):
        raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))
    with pytest.raises(WriteFailed) as caught, explained_write(tmp_path / "f", "x"):
        raise OSError(errno.EIO, os.strerror(errno.EIO))
    assert "Input/output error (EIO;" in str(caught.value)
    assert "no space" not in str(caught.value)


def test_the_failing_file_of_several_is_named(tmp_path):
    err = OSError(errno.ENOSPC, "No space left on device")
    err.filename = str(tmp_path / "data" / "tokens.bin")
    with pytest.raises(WriteFailed, match="the data directory's tokens.bin to "), \
            explained_write(tmp_path / "data", "the data directory"):
        raise err


def test_other_errors_pass_unchanged_and_needed_is_computed_only_on_failure(tmp_path):
    def needed() -> int:
        raise AssertionError("computed although nothing failed")

    with explained_write(tmp_path, "x", needed=needed):
        pass
    with pytest.raises(KeyError), explained_write(tmp_path, "x", needed=needed):
        raise KeyError("not a write")


def test_library_errors_that_hide_the_os_error_are_translated():
    # safetensors' own wording of an OS error (as it reads with a file size limit: errno 27)
    found = as_os_error(SafetensorError(
        "Error while serializing: I/O error: No space left on device (os error 28)"))
    assert found is not None and found.errno == errno.ENOSPC
    assert as_os_error(SafetensorError("invalid tensor")) is None
    found = as_os_error(RuntimeError("[enforce fail at inline_container.cc:672] . unexpected "
                                     "pos 704 vs 598"))
    assert found is not None and found.errno is None and "unexpected pos" in str(found)
    assert as_os_error(RuntimeError("shape mismatch")) is None

    class FakeCheckpointException(BaseException):  # DCP's: {rank: (error, traceback)}
        failures = {1: (ENOSPC, None)}

    assert as_os_error(FakeCheckpointException()) is ENOSPC


def test_free_bytes_reads_the_nearest_existing_parent(tmp_path):
    assert free_bytes(tmp_path / "a" / "b") == pytest.approx(
        shutil.disk_usage(tmp_path).free, rel=0.01)


def test_a_real_short_write_keeps_its_errno(tmp_path):
    """A file size limit makes real writes fail (EFBIG), which safetensors and torch.save
    (through checkpoint.save_pt) report with the OS error kept."""
    code = (
        "import resource, signal, sys, torch\n"
        "from pathlib import Path\n"
        "from safetensors.torch import save_file\n"
        "from litebert.train.checkpoint import save_pt\n"
        "from litebert.write_errors import WriteFailed, explained_write\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (50000, 50000))\n"
        "big = {'a': torch.zeros(100000)}\n"
        "for name, save in (('st', lambda p: save_file(big, p)),\n"
        "                   ('pt', lambda p: save_pt(big, p))):\n"
        "    try:\n"
        "        with explained_write(Path(sys.argv[1]) / name, name):\n"
        "            save(Path(sys.argv[1]) / name)\n"
        "    except WriteFailed as err:\n"
        "        print(err.errno, err)\n")
    run = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                         text=True, timeout=300)
    lines = run.stdout.splitlines()
    assert len(lines) == 2, run.stderr[-3000:]
    for line in lines:
        assert line.startswith(f"{errno.EFBIG} could not write ") and "File too large" in line


def test_save_pt_writes_what_torch_load_reads(tmp_path):
    save_pt({"a": torch.ones(3)}, tmp_path / "ok.pt")
    assert torch.equal(torch.load(tmp_path / "ok.pt", weights_only=True)["a"], torch.ones(3))
