"""Width buckets and filler rows (tasks/batching.py): the bounded shapes of a compiled
fine-tuning run."""

from __future__ import annotations

import pytest
import torch

from litebert.tasks.batching import bucket_width, left_padding, pad_for, pad_rows, width_buckets


class Side:
    """What pad_for and left_padding read of a tokenizer."""

    def __init__(self, side: str):
        self.padding_side, self.pad_token_id, self.pad_token_type_id = side, 5, 3


def test_width_buckets_double_up_to_the_max_length():
    assert width_buckets(512) == [32, 64, 128, 256, 512]
    assert width_buckets(384) == [32, 64, 128, 256, 384]
    assert width_buckets(100) == [32, 64, 104]  # the top rounded up to 8
    assert width_buckets(20) == [24]


def test_a_batch_takes_the_narrowest_bucket_that_holds_its_longest_row():
    assert [bucket_width(n, 128) for n in (1, 32, 33, 64, 65, 128)] == [32, 32, 64, 64, 128, 128]
    assert [bucket_width(n) for n in (1, 8, 9, 33)] == [8, 8, 16, 40]  # eager: tight
    assert bucket_width(130, 128) == 136  # longer than every bucket: tight, never cut


@pytest.mark.parametrize("side", ["left", "right"])
def test_rows_padded_to_a_bucket_keep_their_tokens_and_shift_as_left_padding_says(side):
    rows = [{"input_ids": [7] * n, "token_type_ids": [0] * n, "attention_mask": [1] * n}
            for n in (3, 40, 17)]
    batch = pad_for(Side(side), rows, max_length=128)
    assert batch["input_ids"].shape == (3, 64)
    shifts = left_padding(Side(side), [3, 40, 17], max_length=128)
    assert shifts == ([61, 24, 47] if side == "left" else [0, 0, 0])
    for i, (n, shift) in enumerate(zip((3, 40, 17), shifts, strict=True)):
        assert batch["attention_mask"][i].sum() == n
        assert batch["attention_mask"][i, shift:shift + n].all()
        assert (batch["input_ids"][i, shift:shift + n] == 7).all()
        assert (batch["token_type_ids"][i][batch["attention_mask"][i] == 0] == 3).all()


def test_filler_rows_copy_the_first_row_with_the_ignored_labels():
    batch = {"input_ids": torch.tensor([[1, 2, 0], [3, 4, 5]]),
             "choice_mask": torch.tensor([[True, False], [True, True]]),
             "labels": torch.tensor([1, 0])}
    filled = pad_rows(batch, 4, {"labels": -100})
    assert filled["input_ids"].tolist() == [[1, 2, 0], [3, 4, 5], [1, 2, 0], [1, 2, 0]]
    assert filled["choice_mask"].tolist() == [[True, False], [True, True]] + [[True, False]] * 2
    assert filled["labels"].tolist() == [1, 0, -100, -100]
    assert batch["labels"].tolist() == [1, 0]  # the collated batch is left as it was
    assert pad_rows(batch, 2, {"labels": -100})["labels"].tolist() == [1, 0]  # full: as is
