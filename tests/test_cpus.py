"""`--workers` defaults to the CPUs this process may use, not the machine's count."""

from __future__ import annotations

import os

import pytest

from litebert.cli import build_parser
from litebert.cpus import usable_cpus


def test_the_affinity_mask_counts_not_the_machine(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3, 7}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert usable_cpus() == 2


def test_without_affinity_masks_the_cpu_count_is_used(monkeypatch):
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    assert usable_cpus() == 6
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert usable_cpus() == 1


@pytest.mark.parametrize("command", [["data", "build", "x", "--tokenizer", "t", "--out", "o"],
                                     ["demo"], ["study", "run", "s", "--out", "o"]])
def test_every_workers_option_defaults_to_the_usable_cpus(monkeypatch, command):
    """A job granted one CPU of a 64-CPU node starts one worker, not 64."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {5}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert build_parser().parse_args(command).workers == 1
