"""Sentence embeddings: a backbone, a pooling of its last hidden states, unit length.

Poolings (POOLINGS):
    "mean"    the mean of the tokens the attention mask keeps (sentence-transformers' mean)
    "cls"     the first token the attention mask keeps (sentence-transformers' cls: [CLS]
              for BERT-style inputs)
    "family"  the backbone's summary token, the one its sequence-classification head reads:
              the first position for BERT-style templates, the last for XLNet's (<cls> last,
              padding on the left); model/backbone.py's `summary_position`

Pooling runs in float32 whatever the autocast (float64 stays float64), and every embedding
is L2-normalised, so a dot product is the cosine.

`SentenceEncoder` holds the backbone at `backbone`, where every head holds it (backbone_of,
layer-wise lr decay and FSDP find it there). It loads a plain model directory of any family
or a sentence-transformers directory (model/sentence_transformers.py: its pooling,
max_seq_length and do_lower_case are read), and saves a directory that both litebert and
`sentence_transformers.SentenceTransformer(DIR)` load: the family's transformers layout of
the bare backbone (hub.py) with the sentence-transformers files around it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from litebert.model.auto import AutoModel
from litebert.model.head_parts import Pooling, pool
from litebert.model.outputs import BaseModelOutput
from litebert.model.sentence_transformers import (
    SentenceTransformersError,
    read_layout,
    write_layout,
)

POOLINGS = ("mean", "cls", "family")
# Ours -> the classifier heads' name of the same reading (model/head_parts.py).
_HEAD_POOLING: dict[str, Pooling] = {"mean": "mean", "cls": "first_unpadded",
                                     "family": "summary"}
# The largest input when neither the caller nor the directory says (BERT's 512).
DEFAULT_MAX_LENGTH = 512


def check_pooling(pooling: str) -> str:
    if pooling not in POOLINGS:
        raise ValueError(f"pooling {pooling!r}: choose from {', '.join(POOLINGS)}")
    return pooling


def sentence_embeddings(hidden: torch.Tensor, attention_mask: torch.Tensor | None,
                        pooling: str, summary_position: int) -> torch.Tensor:
    """hidden (B, T, H), attention_mask (B, T) 1 = token -> (B, H) unit length, in float32 (or
    the hidden states' float64)."""
    wide = hidden.to(torch.promote_types(hidden.dtype, torch.float32))  # bf16 -> fp32, fp64 kept
    out = BaseModelOutput(last_hidden_state=wide)
    pooled = pool(_HEAD_POOLING[check_pooling(pooling)], out, attention_mask, summary_position)
    return F.normalize(pooled, p=2, dim=-1)  # (B, H)


def pooling_of_mode(mode: str, summary_position: int, where: str) -> str:
    """Our pooling for a sentence-transformers pooling mode."""
    if mode == "lasttoken":
        if summary_position != -1:
            raise SentenceTransformersError(
                f"{where}: pooling lasttoken reads the last token, which is not this "
                "backbone's summary token (its inputs are padded on the right)")
        return "family"
    return mode


def mode_of_pooling(pooling: str, summary_position: int) -> str:
    """The sentence-transformers pooling mode that reads what our `pooling` reads (for
    inputs padded as the tokenizer pads them: on the left when the summary is last)."""
    if pooling == "family":
        return "cls" if summary_position == 0 else "lasttoken"
    return check_pooling(pooling)


class SentenceEncoder(nn.Module):
    """forward(input_ids, attention_mask, token_type_ids) -> (B, H) unit-length float32
    sentence embeddings."""

    backbone: Any  # a Backbone (model/backbone.py's protocol); typed loosely as the heads do

    def __init__(self, backbone: nn.Module, pooling: str = "mean",
                 max_seq_length: int | None = None, lowercase: bool = False):
        super().__init__()
        self.backbone = backbone  # the heads' name for the backbone (model/backbone.py)
        self.pooling = check_pooling(pooling)
        self.max_seq_length = max_seq_length  # None: the caller's, else DEFAULT_MAX_LENGTH
        self.lowercase = lowercase  # sentence-transformers' do_lower_case

    @property
    def config(self) -> Any:
        return self.backbone.config

    @property
    def summary_position(self) -> int:
        return self.backbone.summary_position

    def input_length(self, wanted: int | None = None) -> int:
        """Tokens an input is cut to: `wanted`, else the directory's max_seq_length, else
        DEFAULT_MAX_LENGTH; never more than the backbone's positions hold."""
        length = wanted or self.max_seq_length or DEFAULT_MAX_LENGTH
        return min(length, self.config.max_sequence_length)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        out = self.backbone(input_ids, attention_mask, token_type_ids, use_mems=False)
        return sentence_embeddings(out.last_hidden_state, attention_mask, self.pooling,
                                   self.summary_position)  # (B, H)

    @classmethod
    def from_pretrained(cls, directory: str | Path, pooling: str | None = None,
                        **config_overrides: Any) -> SentenceEncoder:
        """A model directory of any family, or a sentence-transformers directory; `pooling`
        None takes the directory's (sentence-transformers), else "mean"."""
        layout = read_layout(directory)
        source = Path(directory) if layout is None else layout.transformer
        backbone: Any = AutoModel.from_pretrained(source, **config_overrides)
        if pooling is None and layout is not None:
            where = str(Path(directory) / "modules.json")
            pooling = pooling_of_mode(layout.pooling_mode, backbone.summary_position, where)
        return cls(backbone, pooling or "mean",
                   layout.max_seq_length if layout is not None else None,
                   layout.do_lower_case if layout is not None else False)

    def save_pretrained(self, directory: str | Path, max_seq_length: int | None = None
                        ) -> Path:
        """The backbone in its family's transformers layout (hub.py) and the
        sentence-transformers files; the tokenizer is the caller's to save beside it."""
        directory = Path(directory)
        self.backbone.save_pretrained(directory)
        write_layout(directory, mode_of_pooling(self.pooling, self.summary_position),
                     self.input_length(max_seq_length), self.config.hidden_size,
                     self.lowercase)
        return directory
