"""tokenizer.json: each backend's tokenization as a `tokenizers` pipeline, so that transformers'
AutoTokenizer (and `tokenizers.Tokenizer.from_file`) give litebert's ids.

WordPiece and byte-level BPE already run on `tokenizers`; they add their post-processors here.
SentencePiece with ALBERT's rules is rebuilt step by step (`sentencepiece_pipeline`), because
transformers' own ALBERT converter makes the user-defined symbols ( ) " - . – £ € added
tokens, which splits "a (b" into "▁a" "(" "▁b" where SentencePiece gives "▁a" "▁" "(" "b":

normalizer
  1. ALBERT's preprocess_text: whitespace runs -> " ", ends stripped (Python's str.split()
     whitespace, as an explicit class); `` and '' -> "; NFKD, then every character with a
     non-zero canonical combining class removed (Python's table, as a class); Python's
     final-sigma rule, then lower case
  2. SentencePiece's normalizer: the model's precompiled character map; runs of spaces
     collapsed, spaces at the start and spaces or "▁" at the end removed; "▁" prepended
pre-tokenizer
  Metaspace: " " -> "▁" and a split before every "▁". Pieces never hold "▁" after their first
  character, so encoding word by word is encoding the whole text, as SentencePiece does.
model
  Unigram with the model's pieces and scores, except that user-defined symbols get the score
  SentencePiece gives them while encoding, 0.1 * (UTF-8 bytes - 1), which beats any
  segmentation through other pieces: they are always single pieces, and the "▁" before one
  stays a piece of its own. (SentencePiece BPE models: BPE with merges ranked by the merged
  piece's score.) ALBERT re-splits pieces like "▁1990," into "▁1990" ","; such pieces never
  come out of its tokenizer, so here they are renamed to strings no word can hold. A model
  trained by `train_sentencepiece` has none (its trainer forms no piece across a digit and the
  comma after it), so the re-split never fires and nothing needs renaming.

Measured (tests/tokenization/test_hf_json.py): identical ids on all 43,812 bbc-news sentences,
alone and in pairs. What still differs from litebert's SentencePiece ids:
- special tokens spelled in raw text ("[MASK]", "<pad>"): transformers matches them before
  normalizing, for every backend; litebert reads them as text, as the official code does;
- two segmentations with exactly equal total score (the same pieces in another order, e.g.
  "555" as "5" "55" or "55" "5"): float rounding picks one, float32 in SentencePiece, float64
  in tokenizers (once in 300 generated sentences with a Japanese model; never on bbc-news);
- ~130 characters whose NFKD or lower case differ between Python's Unicode tables and the
  tokenizers library's (new in Unicode 12-16: U+1C89, U+32FF, U+A7F2-4, U+10781-107BA, ...);
- keep_accents only: a compatibility character followed by a combining mark ("ǌ́", "ﬁ́"):
  tokenizers' Precompiled maps the whole grapheme and drops the mark, SentencePiece keeps it;
- vocabularies with "digit," pieces (official ones): renaming them equals the re-split when
  the piece covers the whole number ("▁1990,"), not always otherwise ("▁1990,000" when ",000"
  is a piece);
- SentencePiece char and word models, and BPE models with multi-character user-defined
  symbols, have no equivalent (save_pretrained writes no tokenizer.json for the former).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from tokenizers import AddedToken, Regex, decoders, normalizers, pre_tokenizers, processors
from tokenizers import Tokenizer as HFTokenizer
from tokenizers.models import BPE, Unigram

from litebert.tokenization.albert_text import (
    UNDERLINE,
    TextRules,
    combining_marks,
    is_number_comma,
)
from litebert.tokenization.base import PairTemplate, TokenizerError
from litebert.tokenization.spm_proto import (
    CONTROL,
    NORMAL,
    UNKNOWN,
    USER_DEFINED,
    SentencePieceModel,
)

TOKENIZER_JSON = "tokenizer.json"
# Python's str.lower() writes a final sigma where "Σ" ends a word; tokenizers' Lowercase never.
_FINAL_SIGMA = r"(?<=\p{Cased}\p{Case_Ignorable}*)\x{3A3}(?!\p{Case_Ignorable}*\p{Cased})"


# ---- post-processors and special tokens, all backends ----------------------------------------

def template_processing(template: PairTemplate, cls_token: str, sep_token: str) -> Any:
    """A TemplateProcessing of `template`, item by item (PairTemplate.parts): [CLS] A [SEP]
    (B [SEP]) with B typed 1, any number of separators with types all 0, or XLNet's
    A <sep> (B <sep>) <cls> with <cls> typed 2."""
    names = {"A": "$A", "B": "$B", "cls": cls_token, "sep": sep_token}

    def spec(pair: bool) -> str:
        return " ".join(f"{names[name]}:{kind}" for name, kind in template.parts(pair))

    return processors.TemplateProcessing(
        single=spec(False), pair=spec(True),
        special_tokens=[(cls_token, template.cls_id), (sep_token, template.sep_id)])


def roberta_processing(template: PairTemplate, cls_token: str, sep_token: str) -> Any:
    """RoBERTa's post-processor: <s> A </s> (</s> B </s>), all type 0, offsets without the
    "Ġ" a token starts with."""
    return processors.RobertaProcessing((sep_token, template.sep_id),
                                        (cls_token, template.cls_id),
                                        trim_offsets=True, add_prefix_space=False)


def byte_level_template_processing(template: PairTemplate, cls_token: str, sep_token: str
                                   ) -> Any:
    """`template` for a byte-level BPE: offsets trimmed of the "Ġ" a token starts with (as
    RobertaProcessing trims them, which TemplateProcessing alone does not), then the template."""
    return processors.Sequence([
        processors.ByteLevel(add_prefix_space=False, trim_offsets=True),
        template_processing(template, cls_token, sep_token)])


def with_specials(pipeline: Any, specials: dict[str, str], template: PairTemplate | None) -> Any:
    """A copy of a tokenizers pipeline with the special tokens and, given a template, its
    [CLS]/[SEP] post-processor: what a backend that runs a tokenizer.json hands
    transformers."""
    hf = HFTokenizer.from_str(pipeline.to_str())
    add_special_tokens(hf, specials.values())
    if template is not None:
        hf.post_processor = template_processing(template, specials["cls"], specials["sep"])
    return hf


def add_special_tokens(hf: Any, tokens: Iterable[str], lstrip: Iterable[str] = ()) -> None:
    """Mark `tokens` (already in the vocabulary) special, as transformers expects them."""
    left = set(lstrip)
    hf.add_special_tokens([AddedToken(t, special=True, normalized=False, lstrip=t in left)
                           for t in tokens])


def extra_tokens(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The added tokens of a parsed tokenizer.json that are not special: words added to a
    vocabulary (transformers' add_tokens), matched before the model splits the text."""
    return [t for t in data.get("added_tokens") or []
            if isinstance(t, dict) and not t.get("special") and isinstance(t.get("content"), str)
            and isinstance(t.get("id"), int)]


def add_extra_tokens(hf: Any, extra: list[dict[str, Any]], source: str) -> None:
    """Give the pipeline `hf` the tokens of extra_tokens(), at the ids the file gives them."""
    for token in extra:
        flags = {k: bool(token.get(k, d)) for k, d in (
            ("single_word", False), ("lstrip", False), ("rstrip", False), ("normalized", True))}
        hf.add_tokens([AddedToken(token["content"], special=False, **flags)])
        if hf.token_to_id(token["content"]) != token["id"]:
            raise TokenizerError(f"{source}: added token {token['content']!r} has id "
                                 f"{token['id']}, but the ids before it end at "
                                 f"{hf.get_vocab_size(with_added_tokens=True) - 2}")


# ---- SentencePiece + ALBERT as a tokenizers pipeline ------------------------------------------

def sentencepiece_pipeline(model: SentencePieceModel, settings: TextRules, source: str) -> Any:
    """normalizer, pre-tokenizer, model and decoder reproducing the SentencePiece backend."""
    if model.treat_whitespace_as_suffix or not model.escape_whitespaces:
        raise TokenizerError(f"{source}: a SentencePiece model with treat_whitespace_as_suffix "
                             "or without escape_whitespaces has no tokenizer.json equivalent")
    hf = HFTokenizer(_model(model, source))
    steps = _albert_steps(settings) + _sentencepiece_steps(model)
    hf.normalizer = normalizers.Sequence(steps)
    hf.pre_tokenizer = pre_tokenizers.Metaspace(replacement=UNDERLINE, prepend_scheme="never",
                                                split=True)
    hf.decoder = decoders.Metaspace(replacement=UNDERLINE, prepend_scheme="always", split=True)
    add_special_tokens(hf, [p.text for p in model.pieces if p.type in (CONTROL, UNKNOWN)])
    return hf


def _model(model: SentencePieceModel, source: str) -> Any:
    unknown = [i for i, p in enumerate(model.pieces) if p.type == UNKNOWN]
    if not unknown:
        raise TokenizerError(f"{source}: the SentencePiece model has no unknown piece")
    texts = _reachable_texts(model)
    if model.model_type == "unigram":
        vocab = [(text, _encoding_score(p.text, p.score, p.type))
                 for text, p in zip(texts, model.pieces, strict=True)]
        return Unigram(vocab, unk_id=unknown[0], byte_fallback=model.byte_fallback)
    if model.model_type == "bpe":
        return BPE({text: i for i, text in enumerate(texts)}, _merges(model),
                   unk_token=texts[unknown[0]], fuse_unk=True, byte_fallback=model.byte_fallback)
    raise TokenizerError(f"{source}: a SentencePiece {model.model_type} model has no "
                         "tokenizer.json equivalent (unigram and bpe models have)")


def _encoding_score(text: str, score: float, kind: int) -> float:
    """SentencePiece's lattice gives user-defined symbols 0.1 * (length in bytes - 1)."""
    return 0.1 * (len(text.encode("utf-8")) - 1) if kind == USER_DEFINED else score


def _reachable_texts(model: SentencePieceModel) -> list[str]:
    """Piece texts, ALBERT's re-split pieces ("digit,") renamed so that no word matches them:
    a word holds "▁" only as its first character."""
    taken = {p.text for p in model.pieces}
    texts = []
    for piece in model.pieces:
        text = piece.text
        if is_number_comma(text):
            while text in taken:
                text += UNDERLINE
            taken.add(text)
        texts.append(text)
    return texts


def _merges(model: SentencePieceModel) -> list[tuple[str, str]]:
    """SentencePiece BPE merges the adjacent pair whose union has the best score: every split
    of a normal piece into two normal pieces, best union first."""
    normal = {p.text: (p.score, i) for i, p in enumerate(model.pieces) if p.type == NORMAL}
    ranked = []
    for text, (score, i) in normal.items():
        for cut in range(1, len(text)):
            left, right = text[:cut], text[cut:]
            if left in normal and right in normal:
                ranked.append((-score, i, cut, left, right))
    return [(left, right) for *_, left, right in sorted(ranked)]


def _albert_steps(settings: TextRules) -> list[Any]:
    steps: list[Any] = []
    if settings.remove_space:
        steps += [normalizers.Replace(Regex(_char_class(_python_whitespace()) + "+"), " "),
                  normalizers.Replace(Regex(r"\A | \z"), "")]
    steps += [normalizers.Replace("``", '"'), normalizers.Replace("''", '"')]
    if not settings.keep_accents:
        steps += [normalizers.NFKD(),
                  normalizers.Replace(Regex(_char_class(combining_marks())), "")]
    if settings.do_lower_case:
        steps += [normalizers.Replace(Regex(_FINAL_SIGMA), "\u03c2"), normalizers.Lowercase()]
    return steps


def _sentencepiece_steps(model: SentencePieceModel) -> list[Any]:
    steps: list[Any] = [normalizers.Precompiled(model.charsmap)] if model.charsmap else []
    if model.remove_extra_whitespaces:  # \A and \z: ^ and $ would match at every newline
        steps += [normalizers.Replace(Regex(" {2,}"), " "),
                  normalizers.Replace(Regex(rf"\A +|[ {UNDERLINE}]+\z"), "")]
    if model.add_dummy_prefix:
        steps.append(normalizers.Prepend(UNDERLINE))
    return steps


@lru_cache(maxsize=1)
def _python_whitespace() -> tuple[int, ...]:
    return tuple(c for c in range(sys.maxunicode + 1) if chr(c).isspace())


def _char_class(codes: Iterable[int]) -> str:
    """An Oniguruma character class of exactly these code points, as ranges."""
    ranges: list[list[int]] = []
    for c in sorted(codes):
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    return "[" + "".join(f"\\x{{{a:X}}}" if a == b else f"\\x{{{a:X}}}-\\x{{{b:X}}}"
                         for a, b in ranges) + "]"
