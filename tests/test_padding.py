"""litebert.padding.pad_batch: one helper for every kind of batch."""

from __future__ import annotations

import pytest
import torch

from litebert.padding import pad_batch


def test_pads_to_a_multiple_of_eight_with_per_field_fill():
    rows = [{"input_ids": torch.tensor([5, 6, 7]), "labels": torch.tensor([-100, 6, -100]),
             "attention_mask": torch.ones(3, dtype=torch.long),
             "sentence_order_label": torch.tensor(1)},
            {"input_ids": torch.arange(10), "labels": torch.full((10,), -100),
             "attention_mask": torch.ones(10, dtype=torch.long),
             "sentence_order_label": torch.tensor(0)}]
    batch = pad_batch(rows, pad_id=1)
    assert batch["input_ids"].shape == (2, 16)
    assert batch["input_ids"][0, 3:].eq(1).all() and batch["labels"][0, 3:].eq(-100).all()
    assert batch["attention_mask"].sum().item() == 13
    assert batch["sentence_order_label"].tolist() == [1, 0]


def test_multiple_choice_rows_become_b_c_w_and_floats_stay_floats():
    rows = [{"input_ids": [[2, 3], [2, 3, 4, 5, 6, 7, 8, 9, 10]], "labels": 1},
            {"input_ids": [[2], [2, 3]], "labels": 0}]
    batch = pad_batch(rows, multiple_of=4)
    assert batch["input_ids"].shape == (2, 2, 12) and batch["labels"].dtype == torch.long
    assert batch["input_ids"][0, 1, :9].tolist() == [2, 3, 4, 5, 6, 7, 8, 9, 10]
    scores = pad_batch([{"input_ids": [1, 2], "labels": 0.5}], multiple_of=1)
    assert scores["labels"].dtype == torch.float32 and scores["input_ids"].shape == (1, 2)


def test_left_padding_puts_the_pad_first_with_the_pad_type():
    """XLNet's batches: every row ends in its last token (<cls>); token types padded with 3."""
    rows = [{"input_ids": [7, 4, 3], "token_type_ids": [0, 0, 2], "attention_mask": [1, 1, 1],
             "labels": [1, 2, 3], "label": 1},
            {"input_ids": [8, 9, 4, 3], "token_type_ids": [0, 0, 0, 2],
             "attention_mask": [1, 1, 1, 1], "labels": [4, 5, 6, 7], "label": 0}]
    batch = pad_batch(rows, pad_id=5, multiple_of=1, side="left",
                      fill={"token_type_ids": 3})
    assert batch["input_ids"].tolist() == [[5, 7, 4, 3], [8, 9, 4, 3]]
    assert batch["attention_mask"].tolist() == [[0, 1, 1, 1], [1, 1, 1, 1]]
    assert batch["token_type_ids"].tolist() == [[3, 0, 0, 2], [0, 0, 0, 2]]
    assert batch["labels"][0].tolist() == [-100, 1, 2, 3] and batch["label"].tolist() == [1, 0]
    right = pad_batch(rows, pad_id=5, multiple_of=1)  # the default is unchanged
    assert right["input_ids"].tolist() == [[7, 4, 3, 5], [8, 9, 4, 3]]
    assert right["token_type_ids"][0].tolist() == [0, 0, 2, 0]


def test_left_padding_of_choices_and_a_wrong_side():
    rows = [{"input_ids": [[2, 3], [2, 3, 4]], "labels": 1}]
    batch = pad_batch(rows, multiple_of=4, side="left")
    assert batch["input_ids"].tolist() == [[[0, 0, 2, 3], [0, 2, 3, 4]]]
    with pytest.raises(ValueError, match="side='middle'"):
        pad_batch(rows, side="middle")


def test_a_fixed_width_pads_every_batch_alike_and_refuses_a_longer_row():
    rows = [{"input_ids": [5, 6, 7], "labels": [-100, 6, -100]}]
    batch = pad_batch(rows, width=13)  # not rounded to multiple_of: the width asked for
    assert batch["input_ids"].shape == batch["labels"].shape == (1, 13)
    assert batch["labels"][0, 3:].eq(-100).all()
    with pytest.raises(ValueError, match="a row of 3 tokens does not fit width=2"):
        pad_batch(rows, width=2)
