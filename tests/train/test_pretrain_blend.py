"""A pre-training run on a blend of two data directories (--data a:W,b:W, data/blend.py):
it trains, resumes exactly, and refuses to continue with other weights."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from litebert.data.builder import BuildConfig, build
from litebert.data.integrity import DataError
from litebert.train import checkpoint
from litebert.train.pretrain import Trainer, pretrain
from litebert.train.run_config import RunConfigError
from litebert.train.state import load_model_state
from tests.data.builds import write_corpus
from tests.helpers.pretrain import file_reads, read_metrics, run_config, tiny_data


@pytest.fixture(scope="module")
def two_directories(tmp_path_factory):
    """The test corpus, and another one built with its tokenizer (the same fingerprint)."""
    root = tmp_path_factory.mktemp("blend")
    first = tiny_data(root)
    corpus = write_corpus(root / "other.txt", docs=60, seed=7)
    build([corpus], root / "tok", root / "other", BuildConfig(
        max_seq_length=64, format="bert", heldout_fraction=0.1))
    return first, root / "other"


def test_a_blended_run_resumes_exactly_and_keeps_its_weights(two_directories, tmp_path):
    a, b = two_directories
    blend = f"{a}:0.7,{b}:0.3"
    straight = tmp_path / "straight"
    pretrain(run_config(a, straight, data=blend, export=False))
    record = json.loads((checkpoint.latest(straight) / "state.json").read_text())
    assert record["data_digest"].startswith("blend:") and record["sampler_version"] == 2
    run = tmp_path / "run"
    shutil.copytree(straight, run)
    shutil.rmtree(checkpoint.latest(run))  # killed after step 3's checkpoint
    trainer = Trainer(run_config(a, run, data=blend, export=False))
    assert trainer.state.step == 3
    assert len(trainer.train_data) == sum(len(p) for p in trainer.train_data.parts)
    trainer.run()
    losses = [x["loss"] for x in read_metrics(straight)[0]]
    assert [x["loss"] for x in read_metrics(run)[0]] == losses
    x, y = (load_model_state(checkpoint.latest(r))[0] for r in (straight, run))
    assert all(torch.equal(x[k], y[k]) for k in x)
    assert trainer.objective.heldout.directory == a  # evaluation reads the first directory
    assert "eval_mlm_accuracy" in read_metrics(run)[1][-1]
    with pytest.raises(RunConfigError, match=r"data weights: \[0.7, 0.3\] there, \[0.5, 0.5\] "
                                             r"here"):
        Trainer(run_config(a, run, data=f"{a}:1,{b}:1", export=False))


def test_a_bad_blend_is_a_sentence_when_the_run_opens_its_data(tmp_path):
    config = run_config("a:1,b", tmp_path / "out")  # a config reads no file: --data as given
    with pytest.raises(DataError, match="--data a:1,b: give every directory a weight"):
        Trainer(config)


def test_a_blend_reads_each_directorys_manifest_once(two_directories, tmp_path, monkeypatch):
    a, b = two_directories
    reads = file_reads(monkeypatch)
    trainer = Trainer(run_config(a, tmp_path / "run", data=f"{a}:0.7,{b}:0.3", export=False))
    assert len(trainer.train_data.parts) == 2  # both opened, their agreement checked
    assert [reads[(d / "manifest.json").resolve()] for d in (a, b)] == [1, 1]
