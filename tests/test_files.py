"""litebert.files: input expansion, compressed files, atomic writes, file records."""

from __future__ import annotations

import bz2
import errno
import fcntl
import gzip
import json
import logging
import lzma
import multiprocessing
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from litebert import files
from litebert.cli import main
from litebert.files import (
    AtomicFile,
    DamagedInputError,
    InputFileError,
    MissingInputError,
    atomic_directory,
    atomic_write,
    damaged_files,
    describe_files,
    exclusive,
    expand_inputs,
    is_temporary,
    open_text,
)
from litebert.tokenization import Tokenizer, train_sentencepiece
from tests.data.builds import write_corpus


@pytest.fixture
def tree(tmp_path):
    """root/a.txt, root/b.txt, root/sub/c.txt, root/sub/deep/d.txt, root/.hidden.txt"""
    root = tmp_path / "root"
    for name in ("a.txt", "b.txt", "sub/c.txt", "sub/deep/d.txt", ".hidden.txt", "e.md"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)
    return root


def names(paths):
    return [p.name for p in paths]


def test_absolute_relative_home_and_recursive_globs(tree, monkeypatch):
    assert names(expand_inputs(str(tree / "*.txt"))) == ["a.txt", "b.txt"]  # absolute
    assert names(expand_inputs(str(tree / "**" / "*.txt"))) == ["a.txt", "b.txt", "c.txt",
                                                                "d.txt"]
    monkeypatch.chdir(tree.parent)
    assert names(expand_inputs("root/sub/*.txt")) == ["c.txt"]  # relative
    monkeypatch.setenv("HOME", str(tree.parent))
    assert names(expand_inputs("~/root/*.txt")) == ["a.txt", "b.txt"]  # ~ in a pattern
    assert names(expand_inputs("~/root/e.md")) == ["e.md"]  # ~ in a plain path


def test_directories_are_walked_sorted_without_hidden_files_and_each_file_once(tree):
    found = expand_inputs([tree, tree / "a.txt", str(tree / "*.txt")])
    assert names(found) == ["a.txt", "b.txt", "e.md", "c.txt", "d.txt"]


def test_missing_inputs_name_the_input(tree):
    with pytest.raises(MissingInputError, match="no file matches the pattern .*nothing"):
        expand_inputs(str(tree / "nothing*.txt"))
    with pytest.raises(FileNotFoundError, match="missing.txt: no such file"):
        expand_inputs(tree / "missing.txt")


def test_cli_data_build_takes_a_quoted_absolute_glob(tmp_path, capsys):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(2):
        write_corpus(corpus / f"part-{i}.txt", docs=30, seed=i)
    tok = train_sentencepiece([corpus], tmp_path / "tok", vocab_size=200).parent
    code = main(["data", "build", str(corpus / "*.txt"), "--tokenizer", str(tok), "--out",
                 str(tmp_path / "data"), "--workers", "1", "--max-seq-length", "64"])
    assert code == 0, capsys.readouterr().err
    manifest = json.loads((tmp_path / "data" / "manifest.json").read_text())
    assert manifest["counts"]["documents"] == 60


@pytest.mark.parametrize("name, compress", [("corpus.TXT.GZ", gzip.compress),
                                            ("corpus.txt.Bz2", bz2.compress),
                                            ("corpus.txt.XZ", lzma.compress)])
def test_compressed_suffixes_in_any_case(tmp_path, name, compress):
    path = tmp_path / name
    path.write_bytes(compress("héllo wörld\n".encode()))
    with open_text(path) as f:
        assert f.read() == "héllo wörld\n"


def test_a_file_that_is_not_what_its_name_says_is_an_error_naming_it(tmp_path):
    fake = tmp_path / "corpus.txt.gz"
    fake.write_text("plain text, not gzip\n")
    with pytest.raises(InputFileError, match=r"corpus\.txt\.gz: the name says gzip"):
        open_text(fake)
    with pytest.raises(InputFileError, match=r"corpus\.txt\.gz: the name says gzip"):
        train_sentencepiece([fake], tmp_path / "tok", vocab_size=50)


def _cut_in_half(path, compress, text):
    data = compress(text.encode())
    path.write_bytes(data[: len(data) // 2])
    return path


@pytest.mark.parametrize("name, compress", [("corpus.txt.gz", gzip.compress),
                                            ("corpus.txt.bz2", bz2.compress),
                                            ("corpus.txt.xz", lzma.compress)])
def test_a_compressed_file_cut_short_is_an_error_naming_it(tmp_path, name, compress):
    """A partial copy of a .gz used to end in the decompressor's bare EOFError."""
    text = write_corpus(tmp_path / "c.txt", docs=400).read_text()
    path = _cut_in_half(tmp_path / name, compress, text)
    with pytest.raises(DamagedInputError, match=rf"{name}: damaged .* cut short or corrupt"):
        with open_text(path) as f:
            f.read()


def test_tokenizer_training_on_a_cut_gz_is_a_message_not_a_traceback(tmp_path, capsys):
    text = write_corpus(tmp_path / "c.txt", docs=400).read_text()
    path = _cut_in_half(tmp_path / "corpus.txt.gz", gzip.compress, text)
    for kind in ("sentencepiece", "bpe"):
        assert main(["tokenizer", "train", str(path), "--kind", kind, "--vocab-size", "300",
                     "--out", str(tmp_path / kind)]) == 2
        err = capsys.readouterr().err
        assert "corpus.txt.gz: damaged gzip data" in err and "Traceback" not in err


def test_tokenizer_trains_on_upper_case_gz(tmp_path):
    """Defect 2: `litebert tokenizer train CORPUS.TXT.GZ` read the gzip bytes as text."""
    text = write_corpus(tmp_path / "c.txt", docs=60).read_bytes()
    path = tmp_path / "CORPUS.TXT.GZ"
    path.write_bytes(gzip.compress(text))
    assert main(["tokenizer", "train", str(path), "--vocab-size", "120", "--out",
                 str(tmp_path / "tok")]) == 0
    tok = Tokenizer.from_pretrained(tmp_path / "tok")
    pieces = [tok.convert_ids_to_tokens(i) for i in range(len(tok))]
    assert "▁model" in pieces or "▁the" in pieces  # real words, not gzip garbage
    assert not any("\x1f" in p or "\ufffd" in p for p in pieces)


def test_atomic_write_replaces_whole_or_not_at_all(tmp_path):
    path = atomic_write(tmp_path / "x.json", "old")
    with pytest.raises(RuntimeError):
        def crash(tmp):
            tmp.write_text("half")
            raise RuntimeError("killed")
        atomic_write(path, crash)
    assert path.read_text() == "old"
    assert not [p for p in tmp_path.iterdir() if is_temporary(p)]


def test_atomic_directory_keeps_the_old_one_until_the_new_one_is_complete(tmp_path):
    final = tmp_path / "ckpt"
    with atomic_directory(final) as tmp:
        (tmp / "a").write_text("1")
    with pytest.raises(RuntimeError), atomic_directory(final) as tmp:
        (tmp / "a").write_text("2")
        raise RuntimeError("killed")
    assert (final / "a").read_text() == "1" and sorted(os.listdir(tmp_path)) == ["ckpt"]


def test_damaged_files_reports_size_and_content_changes(tmp_path):
    for name in ("a.bin", "b.bin"):
        (tmp_path / name).write_bytes(b"0123456789")
    record = describe_files(tmp_path, ["a.bin", "b.bin"])
    assert damaged_files(tmp_path, record, checksums=True) == []
    (tmp_path / "a.bin").write_bytes(b"01234")
    (tmp_path / "b.bin").write_bytes(b"0123456780")
    problems = damaged_files(tmp_path, record, checksums=False)
    assert len(problems) == 1 and "a.bin: 5 bytes" in problems[0]
    problems = damaged_files(tmp_path, record, checksums=True)
    assert len(problems) == 2 and "b.bin: sha256 differs" in problems[1]


def test_exclusive_makes_a_second_process_wait_for_the_first(tmp_path):
    """Two processes guarding the same work take turns (two `study run --only` building
    one data directory deleted each other's temporaries before)."""
    import subprocess
    import sys
    import time

    from litebert.files import exclusive

    lock, log = tmp_path / ".work.lock", tmp_path / "order.txt"
    child = (f"from litebert.files import exclusive\n"
             f"with exclusive({str(lock)!r}, 'work'):\n"
             f"    open({str(log)!r}, 'a').write('child\\n')\n")
    with exclusive(lock, "work"):
        proc = subprocess.Popen([sys.executable, "-c", child])
        time.sleep(1.0)  # the child is blocked on the lock meanwhile
        log.write_text("parent\n")
    assert proc.wait(timeout=600) == 0  # a loaded machine imports slowly
    assert log.read_text() == "parent\nchild\n"


# ---- filesystems without flock: an O_EXCL lock file ---------------------------------------------

def no_flock(*args):
    """flock on Lustre mounted without it, or NFS without a lock daemon."""
    raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))


def hold_and_record(lock, log, name) -> None:
    """In a forked process: hold the lock for a moment, saying when it came and went."""
    with exclusive(lock, "work"):
        with open(log, "a") as f:
            f.write(f"{name} in\n")
        time.sleep(0.4)
        with open(log, "a") as f:
            f.write(f"{name} out\n")


@pytest.fixture
def without_flock(monkeypatch):
    monkeypatch.setattr(fcntl, "flock", no_flock)
    monkeypatch.setattr(files, "LOCK_POLL_SECONDS", 0.05)


def test_without_flock_two_processes_take_turns_on_a_lock_file(tmp_path, without_flock):
    lock, log = tmp_path / ".work.lock", tmp_path / "order.txt"
    fork = multiprocessing.get_context("fork")  # inherits the patched flock
    procs = [fork.Process(target=hold_and_record, args=(lock, log, name)) for name in "ab"]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    assert log.read_text().splitlines() in (["a in", "a out", "b in", "b out"],
                                            ["b in", "b out", "a in", "a out"])
    assert not (tmp_path / ".work.lock.excl").exists()


def test_without_flock_a_waiter_says_so_and_goes_on_when_the_lock_file_goes(
        tmp_path, without_flock, caplog):
    excl = tmp_path / ".work.lock.excl"
    excl.write_text("some-other-host 1\n")  # a holder this host cannot check: waited for
    done = threading.Event()

    def worker() -> None:
        with exclusive(tmp_path / ".work.lock", "work"):
            done.set()

    with caplog.at_level(logging.INFO, logger="litebert"):
        thread = threading.Thread(target=worker)
        thread.start()
        assert not done.wait(0.5)  # still waiting
        assert "another process (some-other-host 1) is writing it; waiting" in caplog.text
        excl.unlink()
        thread.join(30)
    assert done.is_set() and not excl.exists()


def test_without_flock_a_lock_file_of_a_dead_process_is_taken_over(tmp_path, without_flock,
                                                                     caplog):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    excl = tmp_path / ".work.lock.excl"
    excl.write_text(f"{socket.gethostname()} {dead.pid}\n")
    with caplog.at_level(logging.INFO, logger="litebert"), \
            exclusive(tmp_path / ".work.lock", "work"):
        assert excl.read_text() == f"{socket.gethostname()} {os.getpid()}\n"
    assert f"taking over the lock {excl}, left by process {dead.pid}" in caplog.text
    assert not excl.exists()


def test_another_flock_error_is_not_taken_for_a_missing_flock(tmp_path, monkeypatch):
    def broken(*args):
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    monkeypatch.setattr(fcntl, "flock", broken)
    with pytest.raises(OSError, match="Bad file descriptor"), \
            exclusive(tmp_path / ".work.lock", "work"):
        pass


def test_a_failed_atomic_append_removes_its_temporary_and_names_the_file(tmp_path):
    class FullDisk:
        def write(self, data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def close(self):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # flushing fails too

    target = AtomicFile(tmp_path / "tokens.bin")
    target.write(b"x" * 10)
    target.file.close()
    target.file = FullDisk()
    with pytest.raises(OSError) as caught:
        target.write(b"x" * 10)
    assert caught.value.errno == errno.ENOSPC
    assert caught.value.filename == str(tmp_path / "tokens.bin")
    assert list(tmp_path.iterdir()) == []
