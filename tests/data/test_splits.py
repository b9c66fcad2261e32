"""Pass 2 in the workers: every layout's files are byte-identical whatever the number of
workers, on a corpus of several blocks of documents (and of static-mask blocks). The one
test of this for every layout (pass 1's arrays: test_builder)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from litebert.data import pool, splits
from litebert.data.build_config import BuildConfig
from litebert.data.pool import ordered_map, shared_pools
from litebert.data.splits import DOCS_PER_TASK, build_splits
from litebert.tokenization import Tokenizer
from tests.data.builds import small_build, write_corpus

PASS_ONE = ("tokens.bin", "sentences.bin", "documents.bin")
LAYOUTS = {
    "sop": {},
    "dynamic": {"pairs": "dynamic"},
    "nsp": {"objective": "nsp"},
    "full-sentences": {"objective": "none", "packing": "full-sentences"},
    "doc-sentences": {"objective": "none", "packing": "doc-sentences"},
    "streams": {"objective": "none", "packing": "streams", "reuse_len": 12},
    "full-sentences static x2": {"objective": "none", "packing": "full-sentences",
                                 "masking": "static", "dupe_factor": 2},
}
SLOW_LAYOUTS = {
    "none": {"objective": "none"},
    "skip": {"sop_single_sentence": "skip"},
    "dynamic nsp": {"pairs": "dynamic", "objective": "nsp"},
    "pairs static x2": {"masking": "static", "dupe_factor": 2},
    "doc-sentences static x2": {"objective": "none", "packing": "doc-sentences",
                                "masking": "static", "dupe_factor": 2},
}


def pass_one(tmp_path_factory, corpus_and_tokenizer, docs: int):
    """A data directory's pass-1 arrays and tokenizer: a corpus of `docs` documents, the
    training split several blocks of DOCS_PER_TASK."""
    root = tmp_path_factory.mktemp(f"pass1-{docs}")
    corpus = write_corpus(root / "corpus.txt", docs=docs, seed=1)
    _, out = small_build(root, (corpus, corpus_and_tokenizer[1]), max_seq_length=32)
    return out


@pytest.fixture(scope="module")
def pass_one_small(tmp_path_factory, corpus_and_tokenizer):
    return pass_one(tmp_path_factory, corpus_and_tokenizer, 700)


@pytest.fixture(scope="module")
def pass_one_large(tmp_path_factory, corpus_and_tokenizer):
    return pass_one(tmp_path_factory, corpus_and_tokenizer, 2500)


@pytest.fixture(scope="module")
def pools():
    """One pool per worker count for the module: starting one costs a second or more."""
    with shared_pools():
        yield


def pass_two(base, out, fields: dict, workers: int) -> dict:
    """build_splits on a copy of the pass-1 arrays `base` in `out`."""
    out.mkdir()
    for name in PASS_ONE:
        shutil.copy(base / name, out / name)
    manifest = json.loads((base / "manifest.json").read_text())
    cfg = BuildConfig(max_seq_length=32, format="bert", heldout_fraction=0.1, **fields)
    return build_splits(out, cfg, Tokenizer.from_pretrained(base / "tokenizer"),
                        manifest["counts"]["token_dtype"], workers)


def check_same_for_any_workers(base, tmp_path, fields: dict) -> dict:
    counts, files = {}, {}
    for workers in (1, 2, 3):
        out = tmp_path / f"workers-{workers}"
        counts[workers] = pass_two(base, out, fields, workers)
        files[workers] = {p.name: p.read_bytes() for p in sorted(out.glob("*.bin"))}
        assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporaries
    assert counts[1] == counts[2] == counts[3]
    assert files[1].keys() == files[2].keys() == files[3].keys()
    for name in files[1]:
        assert files[1][name] == files[2][name] == files[3][name], name
    return counts[1]


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_pass_two_does_not_depend_on_workers(pass_one_small, pools, tmp_path, layout):
    counts = check_same_for_any_workers(pass_one_small, tmp_path, LAYOUTS[layout])
    assert counts["train"]["documents"] > 2 * DOCS_PER_TASK  # several blocks
    if layout == "full-sentences static x2":
        assert counts["train"]["instances"] > 2 * splits.INSTANCES_PER_BLOCK


@pytest.mark.slow
@pytest.mark.parametrize("layout", list({**LAYOUTS, **SLOW_LAYOUTS}))
def test_pass_two_does_not_depend_on_workers_larger(pass_one_large, pools, tmp_path, layout):
    check_same_for_any_workers(pass_one_large, tmp_path, {**LAYOUTS, **SLOW_LAYOUTS}[layout])


def test_shared_pools_start_one_pool_per_worker_count(pools):
    before = dict(pool._SHARED or {})
    for _ in range(3):
        assert list(ordered_map(np.square, [(i,) for i in range(5)], 2)) == [0, 1, 4, 9, 16]
    assert pool._SHARED is not None and len(pool._SHARED) == len(before | {2: None})
    with shared_pools():  # an inner scope keeps the outer pools
        assert list(ordered_map(abs, [(-3,)], 2)) == [3]
    assert pool._SHARED is not None and 2 in pool._SHARED


def test_the_split_documents_files_hold_the_split_and_go_even_when_a_task_fails(
        tmp_path, corpus_and_tokenizer, monkeypatch):
    """Each split's document ranges are written to a file (documents.bin read in blocks, so
    nothing the size of the corpus is held), which pass 2 reads; a failure removes it."""
    manifest, out = small_build(tmp_path, corpus_and_tokenizer, heldout_fraction=0.2)
    cfg = BuildConfig(**manifest["config"])
    starts = np.fromfile(out / "documents.bin", dtype=np.int64)
    ranges = np.stack([starts[:-1], starts[1:]], axis=1)
    held = splits.split_documents(len(ranges), cfg)
    monkeypatch.setattr(splits, "DOCUMENTS_PER_READ", 7)  # blocks that cut the splits
    seen = {}

    def fail(out_, split, docs, *args):
        seen[split] = (docs.path, docs[0:len(docs)], docs[3:5])
        raise RuntimeError("a worker failed")

    monkeypatch.setattr(splits, "write_instances", fail)
    with pytest.raises(RuntimeError, match="a worker failed"):
        build_splits(out, cfg, Tokenizer.from_pretrained(out / "tokenizer"),
                     manifest["counts"]["token_dtype"], workers=1)
    path, whole, middle = seen["train"]
    np.testing.assert_array_equal(whole, ranges[~held])
    np.testing.assert_array_equal(middle, ranges[~held][3:5])
    assert not path.exists() and not list(out.glob("*split-documents*"))
