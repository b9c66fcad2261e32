"""The WordPiece backend (`vocab.txt`): BERT's tokenizer, run by the `tokenizers` library, so
its ids are those of transformers' BertTokenizer."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from litebert.tokenization.base import TextSettings, TokenizerError

VOCAB_NAME = "vocab.txt"


class WordPieceBackend:
    kind = "wordpiece"
    pair_separators = 1  # [CLS] A [SEP] B [SEP]
    typed_pairs = True
    file_name = VOCAB_NAME

    def __init__(self, path: Path, settings: TextSettings):
        from tokenizers import Tokenizer as HFTokenizer
        from tokenizers import decoders, normalizers, pre_tokenizers
        from tokenizers.models import WordPiece

        self.settings = settings
        try:  # the same reading as BERT's load_vocab: one token a line, trailing "\n" dropped
            lines = path.read_text(encoding="utf-8").split("\n")
        except UnicodeDecodeError as err:
            raise TokenizerError(f"{path}: not UTF-8 text (byte {err.start})") from None
        if lines and lines[-1] == "":
            lines.pop()
        self.pieces = lines
        vocab = {token: i for i, token in enumerate(lines)}
        if "[UNK]" not in vocab:
            raise TokenizerError(f"{path}: a WordPiece vocabulary needs an [UNK] line")
        self.tk = HFTokenizer(WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
        self.tk.normalizer = normalizers.BertNormalizer(
            clean_text=True, handle_chinese_chars=settings.tokenize_chinese_chars,
            strip_accents=settings.strip_accents, lowercase=settings.do_lower_case)
        self.tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        self.tk.decoder = decoders.WordPiece(prefix="##")
        self.vocab = vocab
        self.word_start = np.array([not p.startswith("##") for p in self.pieces])

    def special_mask(self) -> np.ndarray:
        """(V,) bool: True for "[...]" tokens ([PAD] [UNK] [CLS] [SEP] [MASK] [unused12] ...),
        which BERT's vocabularies put anywhere (ids 0 and 100-103 in bert-base); no text
        tokenizes to them (BertPreTokenizer splits "[" off), so masking never draws them."""
        return np.array([len(p) > 2 and p[0] == "[" and p[-1] == "]" for p in self.pieces],
                        dtype=bool)

    def token_to_id(self, token: str) -> int | None:
        return self.vocab.get(token)

    def batch_encode(self, texts: Sequence[str], num_threads: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        # tokenizers picks its own thread count (RAYON_NUM_THREADS); num_threads is unused.
        encodings = self.tk.encode_batch_fast(list(texts), add_special_tokens=False)
        arrays = [np.array(e.ids, dtype=np.int32) for e in encodings]
        lengths = np.fromiter((a.size for a in arrays), dtype=np.int64, count=len(arrays))
        flat = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int32)
        return flat, self.word_start[flat], lengths

    def encode_with_offsets(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        encoding = self.tk.encode(text, add_special_tokens=False)
        return list(encoding.ids), list(encoding.offsets)

    def decode(self, ids: list[int], specials: set[int]) -> str:
        return self.tk.decode(ids, skip_special_tokens=False)
