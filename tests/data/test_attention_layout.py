"""What batches carry for `attention: document | unpadded` (data/attention_layout.py) and the
document of each position of a packed item (data/packing.py). The varlen offsets the model
makes of unpadded rows: tests/model/test_attention.py."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch._dynamo.testing import CompileCounter

from litebert.data.attention_layout import (
    UNPAD_BUCKETS,
    bucket,
    filler_segments,
    mark_tokens_dynamic,
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


def test_unpadded_rows_list_real_tokens_and_bucket_their_count():
    rows, width = 8, 32
    sizes = set()
    rng = np.random.default_rng(0)
    segments = filler_segments(rows, width)
    for _ in range(200):
        lengths = rng.integers(1, width + 1, rows)
        lengths[0] = min(lengths[0], width - segments)  # room for the filler segments
        mask = mask_of(lengths, width)
        ids = with_unpadded_rows({"input_ids": mask, "attention_mask": mask})["document_ids"]
        real = int(lengths.sum())
        assert ids[:real].tolist() == np.repeat(np.arange(rows), lengths).tolist()
        filler = len(ids) - real
        assert (ids[real:] == -1).all() and segments <= filler <= segments * width
        assert len(ids) % bucket(rows, width) == 0 or len(ids) == rows * width
        sizes.add(len(ids))
    assert len(sizes) <= UNPAD_BUCKETS  # the shapes a CUDA graph records per (B, T)
    full = torch.ones(2, 8, dtype=torch.long)
    assert "document_ids" not in with_unpadded_rows({"input_ids": full, "attention_mask": full})


@pytest.mark.parametrize(("rows", "width"), [(8, 64), (32, 512), (256, 128), (128, 512),
                                             (3, 5), (1, 2), (9, 3)])
def test_the_filler_fits_its_segments_whatever_the_batch(rows, width):
    """F segments of at most T tokens hold the most filler any N leaves (F slots and a
    bucket's rounding), and a batch unpads only with F padding positions or more."""
    F, step = filler_segments(rows, width), bucket(rows, width)
    assert F + step - 1 <= F * width and F <= rows
    lengths = np.full(rows, width)
    lengths[:F] = width - 1  # F padding positions, one per row: every one a filler slot
    mask = mask_of(lengths, width)
    ids = with_unpadded_rows({"input_ids": mask, "attention_mask": mask})["document_ids"]
    assert len(ids) == rows * width and int((ids == -1).sum()) == F
    lengths[0] = width  # F - 1: too few for F segments, so the padded path
    mask = mask_of(lengths, width)
    assert "document_ids" not in with_unpadded_rows({"input_ids": mask, "attention_mask": mask})


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
