"""What batches carry for `attention: document | unpadded` (data/attention_layout.py) and the
document of each position of a packed item (data/packing.py). The varlen offsets the model
makes of unpadded rows: tests/model/test_attention.py."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch._dynamo.testing import CompileCounter

from litebert.data.attention_layout import (
    GRANULE,
    MAX_FILLER,
    granule,
    mark_tokens_dynamic,
    unpadded_size,
    with_unpadded_rows,
)
from litebert.data.integrity import DataError
from litebert.data.loader import PretrainingDataset
from litebert.data.packing import assemble_packed, packed_document_ids
from litebert.tokenization import PairTemplate
from tests.data.builds import small_build

CLS, SEP = 1, 2


@pytest.mark.parametrize("cls_last", [False, True])
def test_packed_document_ids_change_right_after_each_separator(cls_last):
    spans = np.array([(0, 4), (10, 2), (20, 3)])
    template = PairTemplate(CLS, SEP, cls_last=cls_last)
    ids, *_ = assemble_packed(np.arange(30), np.ones(30, dtype=bool), spans, template)
    documents = packed_document_ids(spans[:, 1], template)
    assert len(documents) == len(ids)
    text = [CLS] if not cls_last else []
    want = [0] * (len(text) + 5) + [1] * 3 + [2] * 4 + ([2] if cls_last else [])
    assert documents.tolist() == want
    # every document ends with its separator (the cls belongs to the first or last)
    closing = np.flatnonzero(np.diff(documents))
    assert ids[closing].tolist() == [SEP, SEP]


@pytest.fixture(scope="module")
def packed_dir(tmp_path_factory, corpus_and_tokenizer):
    _, out = small_build(tmp_path_factory.mktemp("attention"), corpus_and_tokenizer,
                         objective="none", packing="full-sentences")
    return out


def test_document_items_and_batches(packed_dir):
    ds = PretrainingDataset(packed_dir, attention="document")
    crossing = [i for i in range(len(ds)) if len(ds.packed.spans_of(i)) > 1][:4]
    shorter = min(range(len(ds)), key=lambda i: len(ds[i]["input_ids"]))  # padded in a batch
    items = [ds[i] for i in [*crossing, shorter]]
    for i, item in zip(crossing, items, strict=False):
        ids, documents = item["input_ids"].numpy(), item["document_ids"].numpy()
        assert documents.shape == ids.shape and documents[0] == 0
        assert documents[-1] == len(ds.packed.spans_of(i)) - 1
        starts = np.flatnonzero(np.diff(documents)) + 1
        assert (ds.inputs(i)[0][starts - 1] == ds.special_ids["sep"]).all()
    batch = ds.collate(items)
    real = batch["attention_mask"].bool()
    assert not real.all()  # the short item is padded
    assert (batch["document_ids"][~real] == -1).all() and (batch["document_ids"][real] >= 0).all()
    assert "document_ids" not in PretrainingDataset(packed_dir)[0]  # only when asked


def test_document_attention_needs_packed_data(tmp_path, corpus_and_tokenizer):
    _, pairs = small_build(tmp_path, corpus_and_tokenizer)
    with pytest.raises(DataError, match="attention 'document' needs packed data .*--packing "
                                        "full-sentences"):
        PretrainingDataset(pairs, attention="document")
    with pytest.raises(DataError, match="attention='flash'; choose from full, document"):
        PretrainingDataset(pairs, attention="flash")


def mask_of(lengths: np.ndarray, width: int) -> torch.Tensor:
    return (torch.arange(width)[None] < torch.as_tensor(lengths)[:, None]).long()  # (B, T)


def unpadded_ids(lengths: np.ndarray, width: int) -> torch.Tensor | None:
    mask = mask_of(lengths, width)
    return with_unpadded_rows({"input_ids": mask, "attention_mask": mask}).get("document_ids")


def test_unpadded_rows_list_real_tokens_then_one_to_t_filler_slots():
    rows, width = 8, 32
    rng = np.random.default_rng(0)
    for _ in range(200):
        lengths = rng.integers(1, width + 1, rows)
        lengths[0] = min(lengths[0], width - 1)  # a padding position at least
        ids = unpadded_ids(lengths, width)
        real = int(lengths.sum())
        assert ids[:real].tolist() == np.repeat(np.arange(rows), lengths).tolist()
        filler = len(ids) - real
        assert (ids[real:] == -1).all() and 1 <= filler <= width
        assert len(ids) % granule(real, width) == 0 or len(ids) == rows * width
    full = torch.ones(2, 8, dtype=torch.long)
    assert "document_ids" not in with_unpadded_rows({"input_ids": full, "attention_mask": full})


# Batch shapes people train, each with the share of its rows' real tokens: uniform in a
# range (a corpus of mixed lengths), or a skew of short rows (fine-tuning's sentences).
SHAPES = [(32, 512, 0.4, 1.0), (32, 512, 0.55, 0.7), (8, 128, 0.4, 1.0), (256, 128, 0.4, 1.0),
          (128, 512, 0.4, 1.0), (64, 256, 0.1, 0.5), (16, 64, 0.3, 1.0)]


@pytest.mark.parametrize(("rows", "width", "low", "high"), SHAPES)
def test_the_filler_is_at_most_three_percent_of_the_real_tokens(rows, width, low, high):
    """Seeded batches of rows low..high full: filler / real <= 3%, N a multiple of the
    granule (128 where that stays within 3%) or the whole batch, filler 1 to T slots and no
    more than the padding positions."""
    rng = np.random.default_rng(rows + width)
    worst = 0.0
    for _ in range(100):
        lengths = np.maximum(1, (rng.uniform(low, high, rows) * width).astype(int))
        lengths[0] = min(lengths[0], width - 1)
        ids = unpadded_ids(lengths, width)
        real, N = int(lengths.sum()), len(ids)
        step = granule(real, width)
        assert 1 <= N - real <= min(width, rows * width - real)
        assert N % step == 0 or N == rows * width
        assert step == min(GRANULE, width) or step * 2 > real * MAX_FILLER
        worst = max(worst, (N - real) / real)
    assert worst <= MAX_FILLER == 0.03


def test_the_granule_is_a_power_of_two_within_the_filler_bound():
    for width in (2, 5, 64, 128, 512):
        for real in (1, 33, 34, 100, 1000, 4266, 4267, 50_000):
            step = granule(real, width)
            assert step & (step - 1) == 0 and step <= min(GRANULE, width)
            assert step == 1 or step <= real * MAX_FILLER
    assert granule(4267, 512) == 128 and granule(4266, 512) == 64  # 128 / 0.03 = 4266.7


def test_unpadded_size_fits_the_batch():
    """The filler takes padding positions of its own: N never passes B x T, and a batch
    with one padding position fills it."""
    assert unpadded_size(16 * 128 - 1, 16, 128) == 16 * 128
    lengths = np.full(4, 8)
    lengths[2] = 7
    assert len(unpadded_ids(lengths, 8)) == 32
    assert unpadded_ids(np.full(4, 8), 8) is None  # nothing padded: the plain path


def test_a_row_without_real_tokens_is_not_unpadded():
    """Its segment would hold no token: the batch takes the padded path."""
    mask = mask_of(np.array([5, 0, 7]), 8)
    assert "document_ids" not in with_unpadded_rows({"input_ids": mask, "attention_mask": mask})


def test_unpadded_token_counts_compile_once():
    """Marked dynamic, three batches of different N run through one graph even with
    dynamic=False (the Trainer's compile); unmarked, each N compiles anew."""
    for mark, graphs in ((mark_tokens_dynamic, 1), (lambda batch: batch, 3)):
        torch._dynamo.reset()
        counter = CompileCounter()
        twice = torch.compile(lambda ids: ids * 2, backend=counter, dynamic=False,
                              fullgraph=True)
        sizes = set()
        for lengths in ([5, 3, 7], [2, 3, 4], [1, 1, 1]):
            mask = mask_of(np.array(lengths), 8)
            ids = mark(with_unpadded_rows({"input_ids": mask, "attention_mask": mask})
                       )["document_ids"]
            twice(ids)
            sizes.add(len(ids))
        assert len(sizes) == 3 and counter.frame_count == graphs
