"""Training a SentencePiece unigram model with ALBERT's vocabulary layout."""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from litebert.files import atomic_write, expand_inputs, open_text, strip_compression
from litebert.tokenization.albert_text import (
    ALBERT_CONTROL_SYMBOLS,
    ALBERT_USER_SYMBOLS,
    SPIECE_NAME,
    TextRules,
    preprocess_text,
)
from litebert.tokenization.base import TextSettings, TokenizerError
from litebert.tokenization.tokenizer import Tokenizer


def train_sentencepiece(inputs: Sequence[str | Path], out_dir: str | Path, *,
                        vocab_size: int = 30000, input_sentence_size: int = 1_000_000,
                        num_threads: int | None = None,
                        user_defined_symbols: Sequence[str] = ALBERT_USER_SYMBOLS,
                        seed_sentencepiece_size: int = 1_000_000,
                        character_coverage: float = 0.99995,
                        sentence_iterator: Iterable[str] | None = None,
                        do_lower_case: bool = True, keep_accents: bool = False,
                        max_sentence_length: int = 1 << 16, seed: int = 0,
                        text_field: str = "text") -> Path:
    """Train a unigram SentencePiece model with ALBERT's layout; returns out_dir/spiece.model.

    Ids: <pad>=0, <unk>=1, [CLS]=2, [SEP]=3, [MASK]=4, then `user_defined_symbols`. Lines of
    `inputs` (text files, .gz/.bz2/.xz, or directories of them; JSON-lines files give the
    sentences of their `text_field`, as `data build` reads them, not their raw JSON) and then
    the strings of `sentence_iterator` are preprocessed as the tokenizer will preprocess them;
    SentencePiece samples `input_sentence_size` of them at random when there are more.
    """
    import sentencepiece as spm

    if not isinstance(vocab_size, int) or vocab_size <= 5 + len(user_defined_symbols):
        raise TokenizerError(f"vocab_size={vocab_size!r} must exceed the 5 special pieces plus "
                             f"{len(user_defined_symbols)} user-defined symbols")
    files = expand_inputs(inputs, what="tokenizer training input") if inputs else []
    if not files and sentence_iterator is None:
        raise TokenizerError("train_sentencepiece: no inputs and no sentence_iterator")
    settings = TextSettings(do_lower_case=do_lower_case, keep_accents=keep_accents)
    sentences = _training_sentences(files, sentence_iterator, settings, text_field)
    model = io.BytesIO()
    spm.set_random_generator_seed(seed)  # the sampling of input_sentence_size sentences
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=sentences, model_writer=model, model_type="unigram",
            vocab_size=vocab_size, hard_vocab_limit=False, character_coverage=character_coverage,
            pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, pad_piece="<pad>", unk_piece="<unk>",
            control_symbols=list(ALBERT_CONTROL_SYMBOLS),
            user_defined_symbols=list(user_defined_symbols),
            input_sentence_size=input_sentence_size, shuffle_input_sentence=True,
            seed_sentencepiece_size=seed_sentencepiece_size,
            max_sentence_length=max_sentence_length,
            num_threads=num_threads or os.cpu_count() or 1, minloglevel=2)
    except (RuntimeError, OSError) as err:  # the C++ trainer's status, e.g. too few characters
        raise TokenizerError(f"SentencePiece training failed: {err}") from None
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = atomic_write(out_dir / SPIECE_NAME, model.getvalue())
    Tokenizer.from_file(path, do_lower_case=do_lower_case,
                        keep_accents=keep_accents).save_pretrained(out_dir)
    return path


def _training_sentences(files: list[Path], extra: Iterable[str] | None,
                        settings: TextRules, text_field: str) -> Iterator[str]:
    from litebert.data.corpus import JSON_SUFFIXES, read_documents

    def raw() -> Iterator[str]:
        for path in files:
            if strip_compression(path.name).lower().endswith(JSON_SUFFIXES):
                for doc in read_documents([path], fmt="jsonl", text_field=text_field):
                    yield from doc.sentences
                continue
            # A stray bad byte in a large corpus should not stop training: it becomes U+FFFD.
            with open_text(path, errors="replace") as handle:
                yield from handle
        if extra is not None:
            yield from extra

    for line in raw():
        line = preprocess_text(line, settings)
        if line:
            yield line
