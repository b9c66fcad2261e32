"""Sentence embeddings of many texts: `encode` (in memory) and `embed_file` (a file of texts
to a .npy), what evaluation and `litebert embed MODEL TEXTS --out FILE.npy` run.

Texts are tokenized in one batch call (the tokenizer's threads), held as a single-column
table in memory (tasks/table_cache.EncodedTable, viewed as TableRows: truncation, the
template and the padding are array arithmetic per batch), batched by length (sorted, so
little padding) and put back in their order. The model runs on the device it is on (a GPU
when it was placed there; embed_file places it on the GPU when there is one), without
gradients, in eval mode, with a progress display (litebert.progress). Under torchrun,
evaluation shares the batches among the ranks instead (runtime.evaluate_batches).

embed_file reads a .txt (one text per line, as it is: a blank line is the empty text, so row
i of the .npy is line i), or a column of a CSV / TSV / JSON-lines / Parquet file or saved
dataset folder (tasks/tables.py's readers; texts stripped as fine-tuning reads them).
A row without the text is an error naming file:line, since a skipped row would shift every
row after it; the .npy holds float32 (N, H), written whole or not at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from litebert.distributed import unwrap
from litebert.files import InputFileError, atomic_write, open_bytes, strip_compression
from litebert.model.backbone import backbone_of
from litebert.model.sentence_encoder import SentenceEncoder
from litebert.model.sentence_transformers import read_layout
from litebert.progress import progress
from litebert.tasks.batching import length_batches
from litebert.tasks.examples import ReadReport, TaskDataError
from litebert.tasks.runtime import RowIds, Runtime, to_host
from litebert.tasks.table_cache import EncodedTable
from litebert.tasks.table_inputs import TableRows
from litebert.tasks.tables import stream_table
from litebert.tokenization import Tokenizer

DEFAULT_BATCH_SIZE = 32  # sentence-transformers' encode default


def text_rows(tokenizer: Tokenizer, texts: Sequence[str], max_length: int,
              source: str = "texts") -> TableRows:
    """`texts` tokenized (no special tokens, not truncated) as a one-column table; its
    batches are the model inputs of at most `max_length` tokens."""
    n = len(texts)
    if n:
        ids, _, lengths = tokenizer.encode_batch_flat(list(texts))
    else:
        ids, lengths = np.zeros(0, np.int32), np.zeros(0, np.int64)
    table = EncodedTable(directory=Path(source), ids=ids,
                         a_starts=(np.cumsum(lengths) - lengths).astype(np.int64),
                         a_lengths=lengths.astype(np.int32), b_starts=np.zeros(n, np.int64),
                         b_lengths=np.zeros(n, np.int32), labels=np.zeros(n),
                         label_names=None, pairs=False, labelled=False,
                         report=ReadReport(source))
    return TableRows(table, np.arange(n), tokenizer, max_length, None)


def encode_rows(model: nn.Module, rows: TableRows, batch_size: int = DEFAULT_BATCH_SIZE,
                runtime: Runtime | None = None, show: bool = True) -> np.ndarray:
    """(N, H) float32: `model`'s (a SentenceEncoder's) embeddings of `rows`, in their order.
    With `runtime`, every rank gets all of them, each having run its share of the batches."""
    batches = length_batches(rows.lengths, batch_size, None)  # sorted by length

    def collate(ids: RowIds) -> dict[str, torch.Tensor]:
        limit = None if runtime is None else runtime.bucket_limit(rows.max_length)
        return rows.batch(ids, labels=False, bucket_limit=limit)

    if runtime is not None:
        outputs = runtime.evaluate_batches(model, batches, collate, lambda e: [e])
    else:
        outputs = list(_own_batches(model, batches, collate, show))
    config: Any = unwrap(model).config  # a SentenceEncoder's backbone config
    out = np.zeros((len(rows), config.hidden_size), np.float32)
    for ids, (embedded,) in zip(batches, outputs, strict=True):
        out[ids] = embedded  # back in the rows' order
    return out


def _own_batches(model: nn.Module, batches: Sequence[RowIds],
                 collate: Callable[[RowIds], dict[str, torch.Tensor]],
                 show: bool) -> Iterator[list[np.ndarray]]:
    device = next(model.parameters()).device
    with torch.no_grad():
        for ids in progress(batches, desc="embedding", unit="batch", disable=not show):
            batch = {k: v.to(device) for k, v in collate(ids).items()}
            yield [to_host(model(**batch))]  # (B, H)


def as_encoder(model: nn.Module, pooling: str | None = None) -> SentenceEncoder:
    """`model` as a SentenceEncoder: itself, or with `pooling` instead of its own (the same
    backbone), or a backbone (or a head holding one) with `pooling` (None: mean)."""
    if isinstance(model, SentenceEncoder):
        if pooling is None or pooling == model.pooling:
            return model
        return SentenceEncoder(model.backbone, pooling, model.max_seq_length, model.lowercase)
    return SentenceEncoder(backbone_of(model), pooling or "mean")  # type: ignore[arg-type]


def encode(model: nn.Module, tokenizer: Tokenizer, texts: Sequence[str],
           batch_size: int = DEFAULT_BATCH_SIZE, pooling: str | None = None,
           max_length: int | None = None, show_progress: bool = True) -> np.ndarray:
    """(len(texts), H) float32 unit-length embeddings of `texts` by `model` (a
    SentenceEncoder, or a backbone with `pooling`), on the device the model is on; inputs
    cut to `max_length` tokens (None: SentenceEncoder.input_length's rule)."""
    encoder = as_encoder(model, pooling)
    texts = [t.lower() for t in texts] if encoder.lowercase else list(texts)
    rows = text_rows(tokenizer, texts, encoder.input_length(max_length))
    training = encoder.training
    encoder.eval()  # no dropout
    try:
        return encode_rows(encoder, rows, batch_size, show=show_progress)
    finally:
        encoder.train(training)


# ---- files ----------------------------------------------------------------------------------

def read_texts(path: str | Path, column: str = "text") -> list[str]:
    """The texts of a .txt file (one a line) or of `column` of a table file; every row must
    have one (rules in the module docstring)."""
    path = Path(path)
    if path.is_file() and Path(strip_compression(path.name)).suffix.lower() == ".txt":
        texts = _text_lines(path)
    else:
        examples, report = stream_table(path, text_a=column, label=None,
                                        roles={"text_a": "the texts' column"})
        texts = [ex.text_a for ex in examples]
        if report.skipped:
            raise TaskDataError(f"{report.notes[0]}: every row needs a text, one embedding "
                                f"each ({report.skipped} rows without one)")
    if not texts:
        raise TaskDataError(f"{path}: no texts to embed")
    return texts


def _text_lines(path: Path) -> list[str]:
    texts = []
    with open_bytes(path) as f:
        for lineno, raw in enumerate(f, 1):
            try:
                texts.append(raw.decode("utf-8").rstrip("\r\n"))
            except UnicodeDecodeError as err:
                raise InputFileError(f"{path}:{lineno}: invalid UTF-8 ({err.reason})") from None
    if texts:
        texts[0] = texts[0].lstrip("\ufeff")  # a byte-order mark is no text
    return texts


def embed_file(model_dir: str | Path, texts_path: str | Path, out_path: str | Path, *,
               column: str = "text", batch_size: int = DEFAULT_BATCH_SIZE,
               pooling: str | None = None, max_seq_length: int | None = None,
               device: str | torch.device | None = None, show_progress: bool = True) -> Path:
    """Embed the texts of `texts_path` with the model directory (or sentence-transformers
    directory) `model_dir` and write them to `out_path` as a float32 (N, H) .npy; returns
    out_path. device None: the GPU when there is one."""
    texts = read_texts(texts_path, column)
    where = device or ("cuda" if torch.cuda.is_available() else "cpu")
    encoder = SentenceEncoder.from_pretrained(model_dir, pooling).to(where)
    layout = read_layout(model_dir)
    tokenizer = Tokenizer.from_pretrained(layout.transformer if layout else model_dir)
    vectors = encode(encoder, tokenizer, texts, batch_size, max_length=max_seq_length,
                     show_progress=show_progress)

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as handle:  # np.save(path) would append ".npy" to the name
            np.save(handle, vectors.astype(np.float32))

    return atomic_write(out_path, write)
