"""What batches carry for `attention: document | unpadded` (data/attention_layout.py) and the
document of each position of a packed item (data/packing.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from litebert.data.attention_layout import UNPAD_BUCKETS, max_filler, with_unpadded_rows
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


def test_unpadded_rows_list_real_tokens_and_bucket_their_count():
    rows, width = 8, 32
    sizes = set()
    rng = np.random.default_rng(0)
    for _ in range(200):
        lengths = rng.integers(1, width + 1, rows)
        lengths[0] = min(lengths[0], width - 1)  # some padding
        mask = (torch.arange(width)[None] < torch.as_tensor(lengths)[:, None]).long()
        ids = with_unpadded_rows({"input_ids": mask, "attention_mask": mask})["document_ids"]
        real = int(lengths.sum())
        assert ids[:real].tolist() == np.repeat(np.arange(rows), lengths).tolist()
        assert (ids[real:] == -1).all() and 1 <= len(ids) - real <= max_filler(rows, width)
        sizes.add(len(ids))
    assert len(sizes) <= UNPAD_BUCKETS  # shapes a compiled model sees per (B, T)
    full = torch.ones(2, 8, dtype=torch.long)
    assert "document_ids" not in with_unpadded_rows({"input_ids": full, "attention_mask": full})
