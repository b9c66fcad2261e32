"""tests/helpers/launch.py's run_ranks, which starts a command's ranks without torchrun's
agent, must still do the agent's job when a rank fails: end the others, which would wait in
a collective until the store's 10-minute timeout (plain Python children here, no torch)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

from tests.helpers.launch import listening_port, wait_all

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


def test_the_first_rank_to_fail_ends_the_others():
    procs = [subprocess.Popen(SLEEPER),
             subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])]
    started = time.monotonic()
    assert wait_all(procs, timeout=60) == ""
    assert time.monotonic() - started < 30
    assert [p.returncode for p in procs] == [-9, 3]


def test_a_timeout_ends_every_rank_and_says_so():
    procs = [subprocess.Popen(SLEEPER), subprocess.Popen(SLEEPER)]
    assert wait_all(procs, timeout=0.5) == " (killed after 0.5 s)"
    assert [p.returncode for p in procs] == [-9, -9]


def test_ranks_that_all_finish_are_waited_for():
    procs = [subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({t})"])
             for t in (0.3, 0)]
    assert wait_all(procs, timeout=60) == ""
    assert [p.returncode for p in procs] == [0, 0]


def test_the_store_port_is_free_and_below_the_ephemeral_range():
    port = listening_port()
    assert 20000 <= port < 32768
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))  # nothing holds it
