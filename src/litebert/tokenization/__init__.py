"""Tokenizers: one `Tokenizer` API over one backend per vocabulary kind.

- `sentencepiece.py`: SentencePiece (`spiece.model`), with ALBERT's text rules (`albert_text.py`)
- `layouts.py`: ALBERT's and XLNet's SentencePiece layouts (ids, settings, template) as data
- `wordpiece.py`: WordPiece (`vocab.txt`), BERT's
- `bpe.py`: byte-level BPE (`vocab.json` + `merges.txt` or `tokenizer.json`)
- `bpe_flavours.py`: RoBERTa's and ModernBERT's byte-level BPE specials and templates as data
- `base.py`: what they share: the `Backend` protocol, `PairTemplate`, `TextSettings`
- `tokenizer.py`: the public `Tokenizer` (pairs, truncation, offsets, batch encoding, files)
- `hf_json.py`: each backend as a `tokenizers` pipeline, saved as `tokenizer.json` for
  transformers (`spm_proto.py` reads the SentencePiece model fields it needs)
- `vocabulary.py`: whether data and a model share a vocabulary (`check_vocabulary`)
- `unigram_json.py`: a Unigram tokenizer.json without its spiece.model, run as it is
- `train.py`: training a SentencePiece model in ALBERT's or XLNet's layout or a byte-level BPE
  in RoBERTa's or ModernBERT's flavour
"""

from litebert.tokenization.albert_text import ALBERT_USER_SYMBOLS, preprocess_text
from litebert.tokenization.base import PairTemplate, TextSettings, TokenizerError
from litebert.tokenization.tokenizer import Tokenizer
from litebert.tokenization.train import (
    TOKENIZER_KINDS,
    train_bpe,
    train_sentencepiece,
    train_tokenizer,
)

__all__ = ["ALBERT_USER_SYMBOLS", "TOKENIZER_KINDS", "PairTemplate", "TextSettings", "Tokenizer",
           "TokenizerError", "preprocess_text", "train_bpe", "train_sentencepiece",
           "train_tokenizer"]
