"""Model inputs from a tokenized table (tasks/table_cache.py), built at batch time.

`TableRows` is one split: which rows of an EncodedTable, in order. It gives the lengths that
length-bucketing sorts by, the gold labels, and each batch as tensors: the rows truncated to
max_seq_length (longest first, as the tokenizer truncates), put in the tokenizer's template
([CLS] A [SEP] B [SEP], RoBERTa's, XLNet's with <cls> last) and padded on its side, all with
array arithmetic over the batch. The result is what `Tokenizer.__call__(a, b, truncation=True,
max_length=...)` then `batching.pad_for` give for the same rows (tests/tasks/
test_table_cache.py holds the two side by side).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from litebert.tasks.batching import bucket_width
from litebert.tasks.examples import TaskDataError
from litebert.tasks.table_cache import EncodedTable
from litebert.tokenization import Tokenizer

LENGTH_BLOCK = 1 << 16  # rows whose input lengths are computed at once (small temporaries)


def truncated_lengths(a: np.ndarray, b: np.ndarray, budget: int, pairs: bool
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Tokens kept of A and of B per row within `budget` (max length less the special
    tokens): the tokenizer's "longest_first" over arrays. A pair over budget cuts its longer
    side; when both must be cut each keeps half, the longer (B on a tie) the odd token."""
    a, b = a.astype(np.int64), b.astype(np.int64)
    if not pairs:
        return np.minimum(a, budget), np.zeros_like(a)
    short = np.minimum(a, b)
    half = budget // 2
    keep_short = np.where(short <= half, short, half)
    keep_long = budget - keep_short
    a_longer = a > b
    fits = a + b <= budget
    keep_a = np.where(fits, a, np.where(a_longer, keep_long, keep_short))
    keep_b = np.where(fits, b, np.where(a_longer, keep_short, keep_long))
    return keep_a, keep_b


def _spans(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row of each token, its place in its row) for rows of `lengths` tokens: (sum,), (sum,)."""
    row_of = np.repeat(np.arange(len(lengths)), lengths)
    first = np.cumsum(lengths) - lengths
    return row_of, np.arange(int(lengths.sum())) - first[row_of]


class TableRows:
    """The rows `index` of `table` as model inputs of at most `max_length` tokens.

    rows[i] is row i as a dict of lists (as the tokenizer gives it), rows[ids] (a slice,
    list or array) the view of those rows; batch(ids) the padded tensors of rows ids."""

    def __init__(self, table: EncodedTable, index: np.ndarray, tokenizer: Tokenizer,
                 max_length: int, labels: list[str] | None):
        self.table, self.tokenizer, self.max_length = table, tokenizer, max_length
        self.index = np.asarray(index, dtype=np.int64)  # (n,) rows of table
        self.label_names = labels  # the task's classes in order; None for scores
        self.template = tokenizer.template
        self.num_special = self.template.num_special(table.pairs)
        self.budget = max_length - self.num_special
        if self.budget < 0:
            raise TaskDataError(f"max_seq_length={max_length} leaves no room for text: the "
                                f"template adds {self.num_special} special tokens")
        self.lengths = np.concatenate(  # (n,) int32; in blocks: no (n,) int64 temporaries
            [self._input_lengths(self.index[i:i + LENGTH_BLOCK])
             for i in range(0, len(self.index), LENGTH_BLOCK)] or [np.zeros(0, np.int32)])
        self._lookup = None if labels is None or table.label_names is None else \
            _label_lookup(table.label_names, labels, table)

    def __len__(self) -> int:
        return len(self.index)

    def _input_lengths(self, rows: np.ndarray) -> np.ndarray:
        """(len(rows),) int32: the tokens of each row's model input, truncated."""
        t = self.table
        keep_a, keep_b = truncated_lengths(t.a_lengths[rows], t.b_lengths[rows], self.budget,
                                           t.pairs)
        return (keep_a + keep_b + self.num_special).astype(np.int32)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, (int, np.integer)):
            return self._row(int(key))
        view = TableRows.__new__(TableRows)
        view.__dict__.update(self.__dict__)
        view.index, view.lengths = self.index[key], self.lengths[key]
        return view

    @property
    def labelled(self) -> bool:
        """Whether the rows have labels (a test split's have none)."""
        return self.table.labelled

    def labels(self) -> np.ndarray:
        """(n,) the gold labels: class indices (int64) or scores (float64)."""
        return self._gold(self.index)

    def _gold(self, rows: np.ndarray) -> np.ndarray:
        raw = self.table.labels[rows]
        return raw.astype(np.float64) if self._lookup is None else self._lookup[raw]

    def _row(self, i: int) -> dict[str, Any]:
        """Row i as the tokenizer gives it: lists of ids, token types and ones."""
        batch = self.batch([i])
        n = int(self.lengths[i])
        span = slice(batch["input_ids"].shape[1] - n, None) if \
            self.template.padding_side == "left" else slice(0, n)
        row: dict[str, Any] = {k: batch[k][0, span].tolist()
                               for k in ("input_ids", "token_type_ids", "attention_mask")}
        if self.labelled:
            row["labels"] = self._gold(self.index[i:i + 1])[0].item()  # int or float
        return row

    def batch(self, ids: Sequence[int] | np.ndarray, labels: bool = True,
              bucket_limit: int | None = None) -> dict[str, torch.Tensor]:
        """Rows `ids` (positions in this view) padded into tensors: input_ids,
        token_type_ids, attention_mask (B, W) long and, when asked and known, labels (B,).
        W is batching.bucket_width's for the longest row (`bucket_limit` as pad_for's
        max_length: None for a width rounded up to 8)."""
        rows = self.index[np.asarray(ids, dtype=np.int64)]  # (B,) rows of the table
        t = self.table
        keep_a, keep_b = truncated_lengths(t.a_lengths[rows], t.b_lengths[rows], self.budget,
                                           t.pairs)
        parts = self.template.parts(t.pairs)  # (name, token type) in order
        sizes = np.stack([keep_a if name == "A" else keep_b if name == "B" else
                          np.ones_like(keep_a) for name, _ in parts], axis=1)  # (B, P)
        total = sizes.sum(1)  # (B,)
        width = bucket_width(int(total.max()), bucket_limit)
        shift = width - total if self.template.padding_side == "left" else np.zeros_like(total)
        starts = shift[:, None] + np.cumsum(sizes, 1) - sizes  # (B, P) where each part begins
        input_ids = np.full((len(rows), width), self.tokenizer.pad_token_id or 0, np.int64)
        types = np.full((len(rows), width), self.tokenizer.pad_token_type_id, np.int64)
        sources = {"A": t.a_starts[rows], "B": t.b_starts[rows]}
        specials = {"cls": self.template.cls_id, "sep": self.template.sep_id}
        for p, (name, kind) in enumerate(parts):  # a few parts, each over the whole batch
            row_of, place = _spans(sizes[:, p])
            at = starts[row_of, p] + place
            input_ids[row_of, at] = specials[name] if name in specials else \
                t.ids[sources[name][row_of] + place]
            types[row_of, at] = kind
        columns = np.arange(width)
        mask = (columns >= shift[:, None]) & (columns < (shift + total)[:, None])
        out = {"input_ids": torch.from_numpy(input_ids), "token_type_ids": torch.from_numpy(types),
               "attention_mask": torch.from_numpy(mask.astype(np.int64))}
        if labels and self.labelled:
            gold = self._gold(rows)
            out["labels"] = torch.from_numpy(gold.astype(np.float32)) if self._lookup is None \
                else torch.from_numpy(gold.astype(np.int64))
        return out


def _label_lookup(codes: list[str], labels: list[str], table: EncodedTable) -> np.ndarray:
    """(K,) int64: the task's class index of each label code of `table`."""
    unknown = [name for name in codes if name not in labels]
    if unknown:
        raise TaskDataError(f"{table.report.path}: labels {unknown} are not among the task's "
                            f"{labels}")
    return np.array([labels.index(name) for name in codes], dtype=np.int64)


def select_rows(rows: Any, ids: Sequence[int]) -> Any:
    """Rows `ids` of a task's rows: a TableRows view (its batches are built from the mapped
    arrays), or a list of the rows of any other sequence (SQuAD's, RACE's dicts)."""
    if isinstance(rows, TableRows):
        return rows[np.asarray(ids, dtype=np.int64)]
    return [rows[i] for i in ids]
