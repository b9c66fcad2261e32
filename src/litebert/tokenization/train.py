"""Training a tokenizer: a SentencePiece unigram model with ALBERT's or XLNet's vocabulary layout
(layouts.py), or a byte-level BPE in RoBERTa's or ModernBERT's flavour (bpe_flavours.py), from
the same inputs (read by `_training_lines`); `size_report` says how large the result is, and why
when it is smaller than asked."""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import sentencepiece as spm
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, models, pre_tokenizers, trainers

from litebert.cpus import usable_cpus
from litebert.files import atomic_write
from litebert.readers import expand, training_lines
from litebert.tokenization.albert_text import SPIECE_NAME, preprocess_text
from litebert.tokenization.base import TokenizerError
from litebert.tokenization.bpe import MERGES_TXT, VOCAB_JSON
from litebert.tokenization.bpe_flavours import FLAVOURS, get_flavour
from litebert.tokenization.layouts import LAYOUTS, get_layout
from litebert.tokenization.tokenizer import Tokenizer

# SentencePiece's default normalization, named: the trainer's and _sentencepiece_sentences' own.
_NORMALIZATION = "nmt_nfkc"
# Where the trainer may not form a piece across: a Unicode noncharacter, which text exchanged
# between programs does not hold, and which nmt_nfkc leaves as it is.
_NO_PIECE_ACROSS = "\ufdd0"


def train_sentencepiece(inputs: Sequence[str | Path], out_dir: str | Path, *,
                        layout: str = "albert", vocab_size: int | None = None,
                        input_sentence_size: int = 1_000_000,
                        num_threads: int | None = None,
                        user_defined_symbols: Sequence[str] | None = None,
                        seed_sentencepiece_size: int = 1_000_000,
                        character_coverage: float = 0.99995,
                        sentence_iterator: Iterable[str] | None = None,
                        do_lower_case: bool | None = None, keep_accents: bool | None = None,
                        max_sentence_length: int = 1 << 16, seed: int = 0,
                        text_field: str = "text") -> Path:
    """Train a unigram SentencePiece model in `layout`'s vocabulary layout (layouts.py);
    returns out_dir/spiece.model.

    "albert": <pad>=0, <unk>=1, [CLS]=2, [SEP]=3, [MASK]=4, lower-cased, 30000 pieces.
    "xlnet": <unk>=0 <s>=1 </s>=2 <cls>=3 <sep>=4 <pad>=5 <mask>=6 <eod>=7 <eop>=8, cased,
    32000 pieces. Then `user_defined_symbols` (default: the layout's); None for vocab_size,
    do_lower_case or keep_accents is the layout's. Lines of `inputs` (text files,
    .gz/.bz2/.xz, or directories of them; JSON lines, Parquet files and datasets'
    save_to_disk folders give the sentences of their `text_field`, as `data build` reads
    them, not their raw records) and then the strings of `sentence_iterator` are preprocessed
    as the tokenizer will preprocess them; SentencePiece samples `input_sentence_size` of them
    at random when there are more. No piece holds a digit followed by a comma ("1990,"): the
    official re-split (albert_text.py) never fires, so tokenizer.json gives the same ids.
    """
    spec = get_layout(layout)
    vocab_size = spec.vocab_size if vocab_size is None else vocab_size
    symbols = [*spec.reserved_symbols, *(spec.text_symbols if user_defined_symbols is None
                                         else user_defined_symbols)]
    _check_room(vocab_size, len(spec.special_ids), len(symbols) - len(spec.reserved_symbols),
                len(spec.reserved_symbols))
    files = expand(inputs, what="tokenizer training input") if inputs else []
    if not files and sentence_iterator is None:
        raise TokenizerError("train_sentencepiece: no inputs and no sentence_iterator")
    settings = dataclasses.replace(spec.settings, **{k: v for k, v in (
        ("do_lower_case", do_lower_case), ("keep_accents", keep_accents)) if v is not None})
    sentences = _sentencepiece_sentences(
        preprocess_text(line, settings)
        for line in _training_lines(files, sentence_iterator, text_field))
    model = io.BytesIO()
    spm.set_random_generator_seed(seed)  # the sampling of input_sentence_size sentences
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=sentences, model_writer=model, model_type="unigram",
            vocab_size=vocab_size, hard_vocab_limit=False, character_coverage=character_coverage,
            **spec.trainer_ids, control_symbols=list(spec.control_symbols),
            user_defined_symbols=symbols, normalization_rule_name=_NORMALIZATION,
            pretokenization_delimiter=_NO_PIECE_ACROSS,
            input_sentence_size=input_sentence_size, shuffle_input_sentence=True,
            seed_sentencepiece_size=seed_sentencepiece_size,
            max_sentence_length=max_sentence_length,
            num_threads=num_threads or usable_cpus(), minloglevel=2)
    except (RuntimeError, OSError) as err:  # the C++ trainer's status, e.g. too few characters
        raise TokenizerError(f"SentencePiece training failed: {err}") from None
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = atomic_write(out_dir / SPIECE_NAME, model.getvalue())
    Tokenizer.from_file(path, do_lower_case=settings.do_lower_case,
                        keep_accents=settings.keep_accents).save_pretrained(out_dir)
    return path


def _check_room(vocab_size: object, specials: int, user_symbols: int, reserved: int) -> None:
    """TokenizerError unless `vocab_size` leaves room for pieces after the fixed entries."""
    if not isinstance(vocab_size, int) or vocab_size <= specials + reserved + user_symbols:
        raise TokenizerError(f"vocab_size={vocab_size!r} must exceed the {specials} special "
                             f"pieces plus {user_symbols} user-defined symbols")


def _sentencepiece_sentences(lines: Iterable[str]) -> Iterator[str]:
    """The preprocessed `lines` as SentencePiece's normalizer gives them, each digit followed by
    a comma parted from it by _NO_PIECE_ACROSS: the trainer splits the text there, so that no
    piece holds "digit,". Normalized first because the trainer looks for the delimiter after
    normalizing, when "１，" has become "1," and a control character between them has gone;
    normalizing again in the trainer changes nothing (nmt_nfkc maps each result to itself)."""
    normalizer = spm.SentencePieceNormalizer(
        rule_name=_NORMALIZATION, add_dummy_prefix=False, escape_whitespaces=False,
        remove_extra_whitespaces=False)
    for line in lines:
        text = normalizer.normalize(line) if line else ""
        if "," in text:
            parts = text.split(",")
            text = ",".join([part + _NO_PIECE_ACROSS if part[-1:].isdigit() else part
                             for part in parts[:-1]] + parts[-1:])
        if text:
            yield text


def train_bpe(inputs: Sequence[str | Path], out_dir: str | Path, *, flavour: str = "roberta",
              vocab_size: int | None = None, min_frequency: int = 2,
              sentence_iterator: Iterable[str] | None = None, text_field: str = "text") -> Path:
    """Train a byte-level BPE in `flavour`'s layout (bpe_flavours.py); returns out_dir
    (vocab.json, merges.txt, tokenizer.json, tokenizer_config.json).

    "roberta": <s>=0, <pad>=1, </s>=2, <unk>=3, the 256 bytes, the merges, <mask> last;
    50265 tokens. "modernbert": the 256 bytes, the merges, then [UNK] [CLS] [SEP] [PAD]
    [MASK]; 50368 tokens. The last ids are vocab_size - 1, ... when the text has enough pairs
    that occur `min_frequency` times; None for vocab_size is the flavour's. Inputs as for
    train_sentencepiece; the text is not preprocessed (byte-level BPE keeps case and accents),
    only the line ends are dropped.
    """
    spec = get_flavour(flavour)
    vocab_size = spec.vocab_size if vocab_size is None else vocab_size
    n_special = len(spec.leading) + len(spec.trailing)
    if not isinstance(vocab_size, int) or vocab_size <= 256 + n_special:
        raise TokenizerError(f"vocab_size={vocab_size!r} must exceed the 256 bytes plus "
                             f"{n_special} special tokens")
    files = expand(inputs, what="tokenizer training input") if inputs else []
    if not files and sentence_iterator is None:
        raise TokenizerError("train_bpe: no inputs and no sentence_iterator")
    lines = (line.rstrip("\r\n") for line in
             _training_lines(files, sentence_iterator, text_field))
    vocab, merges = _train_byte_level(
        (line for line in lines if line), vocab_size - len(spec.trailing), min_frequency,
        [spec.tokens[role] for role in spec.leading])
    for role in spec.trailing:  # after training: the ids after the merges
        vocab[spec.tokens[role]] = len(vocab)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(out_dir / VOCAB_JSON, json.dumps(vocab, ensure_ascii=False) + "\n")
    atomic_write(out_dir / MERGES_TXT, "#version: 0.2\n" + "".join(f"{m}\n" for m in merges))
    Tokenizer.from_pretrained(out_dir).save_pretrained(out_dir)
    return out_dir


def _train_byte_level(lines: Iterable[str], size: int, min_frequency: int,
                      specials: list[str]) -> tuple[dict[str, int], list[str]]:
    """(vocab, merges as "a b") of a byte-level BPE of `size` tokens: `specials` first, the
    256 bytes, then the merges the tokenizers library learns from `lines`."""
    hf = HFTokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=size, min_frequency=min_frequency, special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    hf.train_from_iterator(lines, trainer=trainer)
    model = json.loads(hf.to_str())["model"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    return dict(model["vocab"]), merges


@dataclass(frozen=True)
class TokenizerKind:
    """What `litebert tokenizer train --kind NAME` trains."""

    trainer: str  # "sentencepiece" (train_sentencepiece) or "bpe" (train_bpe)
    layout: str  # a SentencePiece layout (layouts.py) or a BPE flavour (bpe_flavours.py)

    @property
    def vocab_size(self) -> int:
        """The default vocabulary size."""
        if self.trainer == "sentencepiece":
            return LAYOUTS[self.layout].vocab_size
        return FLAVOURS[self.layout].vocab_size


TOKENIZER_KINDS: dict[str, TokenizerKind] = {
    "sentencepiece": TokenizerKind("sentencepiece", "albert"),
    "xlnet": TokenizerKind("sentencepiece", "xlnet"),
    "bpe": TokenizerKind("bpe", "roberta"),
    "modernbert": TokenizerKind("bpe", "modernbert")}


def train_tokenizer(kind: str, inputs: Sequence[str | Path], out_dir: str | Path,
                    **options) -> Path:
    """Train a tokenizer of `kind` (TOKENIZER_KINDS): SentencePiece in ALBERT's layout,
    SentencePiece in XLNet's, or a byte-level BPE in RoBERTa's or ModernBERT's flavour;
    `options` go to train_sentencepiece or train_bpe. Returns the model file (SentencePiece)
    or directory (BPE) written."""
    if kind not in TOKENIZER_KINDS:
        raise TokenizerError(f"tokenizer kind {kind!r}: choose from {', '.join(TOKENIZER_KINDS)}")
    spec = TOKENIZER_KINDS[kind]
    if spec.trainer == "bpe":
        return train_bpe(inputs, out_dir, flavour=spec.layout, **options)
    return train_sentencepiece(inputs, out_dir, layout=spec.layout, **options)


# Why a trainer made fewer tokens than asked for, and what to do about it.
_SHORT_BECAUSE = {
    "sentencepiece": "the text holds too few distinct pieces for more (SentencePiece builds "
                     "pieces only from strings that occur at least twice, and gives what it "
                     "finds rather than fail); train on more text, or ask for a smaller "
                     "--vocab-size",
    "bpe": "the text has no more pairs that occur at least --min-frequency times to merge; "
           "train on more text, lower --min-frequency, or ask for a smaller --vocab-size"}


def size_report(kind: str, directory: str | Path, asked: int | None = None) -> str:
    """One line on the vocabulary of `kind` trained into `directory`: its size and, when it is
    short of `asked` (None: the kind's default size), why and what to do."""
    spec = TOKENIZER_KINDS[kind]
    asked = spec.vocab_size if asked is None else asked
    made = len(Tokenizer.from_pretrained(directory))
    if made >= asked:
        return f"vocabulary: {made:,} tokens, as asked"
    return (f"vocabulary: {made:,} tokens, {asked - made:,} short of the {asked:,} asked for: "
            f"{_SHORT_BECAUSE[spec.trainer]}")


def _training_lines(files: list[Path], extra: Iterable[str] | None,
                    text_field: str) -> Iterator[str]:
    """The raw lines of text `files` (JSON lines, Parquet and Arrow: the sentences of
    `text_field`, as `data build` reads them), then the strings of `extra`. Not a generator:
    every file's format is checked now, before a trainer starts pulling lines."""
    return itertools.chain(training_lines(files, text_field), extra or ())
