"""The previous release's name of a packing still works: `xlnet` is `streams`.

A directory that release built with `--packing xlnet` has the manifest of today's `streams`
build but for that one word, and a cache key computed over the word "xlnet". It must load,
report and train as streams, stay a cache hit for `--packing streams` (and for
`--packing xlnet`, still accepted), and the key of a streams build must be the one the
previous release computed, so that no existing directory is rebuilt or misread.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from litebert.cli import main
from litebert.data.builder import FORMAT, VERSION, BuildConfig, build
from litebert.data.cache import input_files
from litebert.data.loader import StreamData, open_training_data
from litebert.data.manifest import open_data
from litebert.objectives.plm_data import PLMDataset
from litebert.objectives.plm_report import REPORTERS, reporter_for
from tests.data.builds import small_build

STREAMS = dict(objective="none", packing="streams")
# Fields the previous release left out of the key at these values (its LATER_FIELDS).
PREVIOUS_LATER_FIELDS = {"pairs": "static", "sop_single_sentence": "random",
                         "packing": "pairs", "reuse_len": None}


def previous_release_key(config: dict, files: list[dict], fingerprint: str) -> str:
    """The cache key as the previous release computed it from a manifest's config (packing
    spelled "xlnet"), written out here independently of litebert.data.cache."""
    kept = {k: v for k, v in config.items()
            if k not in PREVIOUS_LATER_FIELDS or v != PREVIOUS_LATER_FIELDS[k]}
    h = hashlib.sha256(json.dumps(kept, sort_keys=True).encode())
    h.update(fingerprint.encode())
    for record in files:
        h.update(f"{record['size']}\0{record['sha256']}\n".encode())
    h.update(f"{FORMAT}-{VERSION}".encode())
    return h.hexdigest()[:16]


def as_previous_release(out) -> dict:
    """Rewrite a streams directory's manifest as the previous release wrote it."""
    path = out / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["config"]["packing"] = "xlnet"
    path.write_text(json.dumps(manifest, indent=2))
    return manifest


def window(dataset: PLMDataset, i: int) -> dict[str, list]:
    return {k: v.tolist() for k, v in dataset[i].items()}


def test_the_old_name_is_read_as_streams():
    assert BuildConfig(objective="none", packing="xlnet").packing == "streams"
    assert BuildConfig(objective="none", packing="xlnet") == BuildConfig(**STREAMS)


def test_an_xlnet_directory_loads_reports_and_stays_a_cache_hit(tmp_path,
                                                                corpus_and_tokenizer):
    corpus, tok = corpus_and_tokenizer
    manifest, out = small_build(tmp_path, corpus_and_tokenizer, **STREAMS)
    assert manifest["config"]["packing"] == "streams"  # what this release writes
    before = [window(PLMDataset(out, "train"), i) for i in (0, 3)]
    old = as_previous_release(out)
    # The key this release recorded is the previous release's key of that manifest.
    fingerprint = old["tokenizer"]["fingerprint"]
    assert manifest["config_hash"] == previous_release_key(old["config"],
                                                           input_files([corpus]), fingerprint)
    dataset = PLMDataset(out, "train")
    assert [window(dataset, i) for i in (0, 3)] == before
    assert isinstance(open_training_data(open_data(out), seed=1), StreamData)
    assert reporter_for(out) is REPORTERS["streams"]
    stamp = (out / "train.stream.bin").stat().st_mtime_ns
    again = build([corpus], tok, out, BuildConfig(**{**old["config"], "packing": "streams"}))
    assert again["config_hash"] == manifest["config_hash"]  # a hit: nothing rewritten
    assert (out / "train.stream.bin").stat().st_mtime_ns == stamp
    assert json.loads((out / "manifest.json").read_text())["config"]["packing"] == "xlnet"


def test_the_cli_accepts_packing_xlnet_and_says_so(tmp_path, corpus_and_tokenizer, capsys):
    corpus, tok = corpus_and_tokenizer
    options = ["--tokenizer", str(tok), "--max-seq-length", "64", "--workers", "1",
               "--format", "bert", "--objective", "none", "--heldout-fraction", "0.1"]
    old, new = tmp_path / "old", tmp_path / "new"
    assert main(["data", "build", str(corpus), "--out", str(old), *options,
                 "--packing", "xlnet"]) == 0
    assert main(["data", "build", str(corpus), "--out", str(new), *options,
                 "--packing", "streams"]) == 0
    capsys.readouterr()
    built = [json.loads((d / "manifest.json").read_text()) for d in (old, new)]
    assert built[0]["config"] == built[1]["config"]
    assert built[0]["config_hash"] == built[1]["config_hash"]
    assert np.array_equal(np.fromfile(old / "train.stream.bin", np.uint16),
                          np.fromfile(new / "train.stream.bin", np.uint16))
    with pytest.raises(SystemExit):
        main(["data", "build", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "streams,xlnet}" in shown and "xlnet: the previous release's name of streams" in shown
