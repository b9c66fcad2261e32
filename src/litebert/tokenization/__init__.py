"""Tokenizers: one `Tokenizer` API over one backend per vocabulary kind.

- `sentencepiece.py`: SentencePiece (`spiece.model`), with ALBERT's text rules (`albert_text.py`)
- `wordpiece.py`: WordPiece (`vocab.txt`), BERT's
- `tokenizer.py`: the public `Tokenizer` (pairs, truncation, offsets, batch encoding)
- `train.py`: training a SentencePiece model in ALBERT's layout
"""

from litebert.tokenization.albert_text import ALBERT_USER_SYMBOLS, preprocess_text
from litebert.tokenization.base import PairTemplate, TextSettings, TokenizerError
from litebert.tokenization.tokenizer import Tokenizer
from litebert.tokenization.train import train_sentencepiece

__all__ = ["ALBERT_USER_SYMBOLS", "PairTemplate", "TextSettings", "Tokenizer", "TokenizerError",
           "preprocess_text", "train_sentencepiece"]
