"""Blending data directories by weight (data/blend.py): the --data syntax, exact counts per
epoch, the index map, the agreement of the directories and what a checkpoint records."""

from __future__ import annotations

import dataclasses
import itertools
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from litebert.cli import main
from litebert.data.blend import (
    BlendedItems,
    DataSpec,
    RunData,
    blend_counts,
    check_agreed,
    data_differences,
    open_items,
    parse_data,
)
from litebert.data.build_config import BuildConfig
from litebert.data.integrity import DataError
from litebert.data.loader import RankSampler
from litebert.data.manifest import DataManifest
from litebert.train.feed import DataPosition, batches


class Part:
    """A directory's items that say where and in which epoch they were drawn."""

    def __init__(self, name: str, n: int):
        self.directory, self.n, self.epoch = Path(name), n, 0

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        assert 0 <= index < self.n
        part = int(self.directory.name[-1])
        return {"x": torch.tensor([part, index, self.epoch])}

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def collate(self, items):
        return {"x": torch.stack([item["x"] for item in items])}


def epoch_items(blend: BlendedItems, epoch: int) -> np.ndarray:
    """(L, 3) (part, index, pass) of every blend index of `epoch`."""
    blend.set_epoch(epoch)
    return np.stack([blend[b]["x"].numpy() for b in range(len(blend))])


# ---- the syntax -----------------------------------------------------------------------------

def test_data_is_a_directory_or_weighted_directories(tmp_path):
    assert parse_data("data/a") == DataSpec((Path("data/a"),), None)
    spec = parse_data("a:0.7,b:0.3")
    assert spec.directories == (Path("a"), Path("b")) and spec.weights == (0.7, 0.3)
    assert parse_data("a:7, b:3").weights == pytest.approx((0.7, 0.3))  # normalised
    assert parse_data("a,b") == DataSpec((Path("a"), Path("b")), None)  # by size
    assert parse_data("c:/x:2,y:1").directories == (Path("c:/x"), Path("y"))
    odd = tmp_path / "x,y:1"
    odd.mkdir()
    assert parse_data(str(odd)).directories == (odd,)  # an existing directory, whole


@pytest.mark.parametrize(("text", "says"), [
    ("a:1,b", "give every directory a weight"),
    ("a:0,b:1", "a has weight 0; weights must be positive"),
    ("a:-1,b:1", "weights must be positive"),
    ("a:1,,b:1", "an empty entry"),
    ("a:1,a:2", "a directory is listed twice"),
    ("a:abc", "'abc' after a: is not a weight, and no directory is named a:abc"),
    ("a:1,b:x", "'x' after b: is not a weight"),
])
def test_bad_data_is_one_sentence(text, says):
    with pytest.raises(DataError, match=f"--data {text}: .*{says}"):
        parse_data(text)


def test_a_bad_weight_of_an_existing_directory_is_named_by_pretrain(tmp_path, capsys,
                                                                   monkeypatch):
    """Not "no manifest.json" for a directory `a:abc`: the weight is what is wrong."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a").mkdir()
    assert main(["pretrain", "--data", "a:abc", "--out", "run"]) == 2
    err = capsys.readouterr().err
    assert "--data a:abc: 'abc' after a: is not a weight" in err and "a:0.5" in err
    assert "manifest" not in err


# ---- counts and the index map ---------------------------------------------------------------

def test_counts_follow_the_weights_and_sum_to_the_epoch():
    assert blend_counts(np.array([10, 20, 30]), np.array([0.5, 0.25, 0.25])).tolist() == \
        [30, 15, 15]
    assert blend_counts(np.array([5, 5]), np.array([2, 1]) / 3).tolist() == [7, 3]
    assert blend_counts(np.array([4, 9]), None).tolist() == [4, 9]
    rng = np.random.default_rng(0)
    for _ in range(200):
        sizes = rng.integers(1, 1000, size=rng.integers(1, 6))
        weights = rng.random(len(sizes)) + 1e-3
        weights /= weights.sum()
        counts = blend_counts(sizes, weights)
        assert counts.sum() == sizes.sum()
        assert np.abs(counts - weights * sizes.sum()).max() < 1  # rounded, never further


def test_each_epoch_holds_exactly_the_weighted_counts_and_reads_each_directory_evenly():
    """Part 0 (10 items) up-weighted to 0.7 of 20: 14 an epoch, 4 of them repeats with the
    next pass's draws; part 1 (10 items) down to 6: the next epoch reads the next six."""
    blend = BlendedItems([Part("p0", 10), Part("p1", 10)], (0.7, 0.3))
    assert len(blend) == 20 and blend.counts.tolist() == [14, 6]
    seen = [epoch_items(blend, e) for e in range(5)]
    for got in seen:
        assert np.bincount(got[:, 0], minlength=2).tolist() == [14, 6]
        keys = {tuple(x) for x in got.tolist()}
        assert len(keys) == len(got)  # a repeated item is another pass: other masks
    stream = np.concatenate(seen)
    for part, n in ((0, 10), (1, 10)):
        mine = stream[stream[:, 0] == part]
        reads = np.bincount(mine[:, 1], minlength=n)
        assert reads.max() - reads.min() <= 1  # every item as often as any other, to one
        # pass k over the directory reads each of its items once
        assert np.array_equal(np.sort(mine[:, 2]), np.repeat(np.arange(len(mine) // n + 1),
                                                             n)[:len(mine)])
    assert np.array_equal(seen[1][seen[1][:, 0] == 1][:, 1], np.arange(6, 12) % 10)
    assert np.array_equal(epoch_items(blend, 3), seen[3])  # deterministic


def test_a_single_directory_blend_is_that_directory():
    part = Part("p0", 7)
    blend = BlendedItems([part], (1.0,))
    for e in range(3):
        got = epoch_items(blend, e)
        assert got.tolist() == [[0, j, e] for j in range(7)]


def test_a_blend_resumes_mid_epoch_exactly_with_any_workers():
    def take(count: int, position: DataPosition, workers: int = 0) -> list[list[list[int]]]:
        blend = BlendedItems([Part("p0", 13), Part("p1", 5)], (0.25, 0.75))
        stream = batches(blend, RankSampler(len(blend), 0, 1, seed=4), 4, workers, position)
        return [b["x"].tolist() for b in itertools.islice(stream, count)]

    straight = take(12, DataPosition())  # 4 micro-batches an epoch
    assert take(7, DataPosition(epoch=1, batch=1)) == straight[5:]
    assert take(7, DataPosition(epoch=1, batch=1), workers=2) == straight[5:]
    parts = np.array(straight)[..., 0].reshape(3, -1)  # (epochs, 16 items)
    assert (parts == 0).any() and (parts == 1).any()


def test_an_empty_directory_is_refused():
    with pytest.raises(DataError, match="p1: no training items to blend"):
        BlendedItems([Part("p0", 3), Part("p1", 0)], (0.5, 0.5))


# ---- the directories must agree -------------------------------------------------------------

def fake_directory(root: Path, name: str, fingerprint: str = "f0", **config) -> DataManifest:
    """A directory's manifest as read, with just the fields a blend compares."""
    values = {**dataclasses.asdict(BuildConfig()), **config}
    manifest = {"config": values, "tokenizer": {"fingerprint": fingerprint}}
    return DataManifest(root / name, manifest, BuildConfig(**values), name)


@pytest.mark.parametrize(("field", "theirs", "shown"), [
    ("max_seq_length", 128, "max_seq_length (512 and 128)"),
    ("max_predictions_per_seq", 7, "max_predictions_per_seq (20 and 7)"),
    ("objective", "nsp", "objective ('sop' and 'nsp')"),
    ("tokenizer", "f1", "tokenizer (fingerprint) ('f0' and 'f1')"),
])
def test_directories_that_disagree_are_named_with_the_field(tmp_path, field, theirs, shown):
    a = fake_directory(tmp_path, "a")
    b = (fake_directory(tmp_path, "b", fingerprint=theirs) if field == "tokenizer"
         else fake_directory(tmp_path, "b", **{field: theirs}))
    check_agreed((a, fake_directory(tmp_path, "same")))
    with pytest.raises(DataError, match=f"--data: {a.directory} and {b.directory} differ in "
                                        f"{re.escape(shown)}; .*rebuild one"):
        check_agreed((a, fake_directory(tmp_path, "same2"), b))


def test_objectives_that_read_streams_take_one_directory(tmp_path):
    class Streams:
        sampling = "mirrored-streams"

        def dataset(self, data, split, seed):
            return Part("p0", 4)

    one, other = fake_directory(tmp_path, "one"), fake_directory(tmp_path, "other")
    assert len(open_items(RunData((one,), None), Streams(), "train", 0)) == 4
    with pytest.raises(DataError, match="--data blends 2 directories, but objective sampling "
                                        "'mirrored-streams' reads streams in order; a blend "
                                        "needs the shuffled sampler"):
        open_items(RunData((one, other), (0.5, 0.5)), Streams(), "train", 0)


# ---- what a checkpoint records --------------------------------------------------------------

def test_a_changed_blend_names_what_changed():
    a = "blend:aaaa*0.7,bbbb*0.3"
    assert data_differences(a, a) == []
    assert data_differences(a, "blend:aaaa*0.5,bbbb*0.5") == [
        ("data weights", [0.7, 0.3], [0.5, 0.5])]
    assert data_differences(a, "blend:aaaa*0.7,cccc*0.3") == [
        ("data directory 2 of the blend (its files' checksums)", "bbbb", "cccc")]
    assert data_differences(a, "aaaa") == [("data (directories blended)", 2, 1)]
    assert data_differences("aaaa", "cccc") == [("data (its files' checksums)", "aaaa", "cccc")]
