"""Directories as transformers writes them, for the six families: tokenizers in each layout
users have on disk, and small model directories with random weights beside them.

    write_tokenizer_dir("albert", "spiece.model", path)
    write_model_dir("electra", path, "ElectraForPreTraining")

Tokenizer layouts (TOKENIZER_LAYOUTS): "tokenizer.json" is what transformers 5's
save_pretrained writes (tokenizer.json + tokenizer_config.json); the vocabulary-file layouts
("vocab.txt", "spiece.model", "vocab.json") are what the slow tokenizers of transformers 4
wrote (the vocabulary, tokenizer_config.json, special_tokens_map.json), and what hub
checkpoints still hold. Vocabularies are trained here on generated English
(tests/fixtures_sp.py) with the sentencepiece and tokenizers libraries: no downloads. The
SentencePiece vocabularies have no user-defined text symbols: transformers 5 turns those into
added tokens when it converts a spiece.model, which differs from the official ALBERT
algorithm (tests/tokenization/test_hf_json.py measures it).
"""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch
import transformers
from tokenizers import AddedToken, decoders, pre_tokenizers, processors
from tokenizers import Tokenizer as HFTokenizer
from tokenizers.implementations import BertWordPieceTokenizer, ByteLevelBPETokenizer
from tokenizers.models import BPE
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from litebert.tokenization import train_bpe, train_sentencepiece
from tests.fixtures_sp import generated_sentences

FAMILIES = ("albert", "bert", "electra", "roberta", "xlnet", "modernbert")
TOKENIZER_LAYOUTS: dict[str, tuple[str, ...]] = {
    "albert": ("tokenizer.json", "spiece.model"), "xlnet": ("tokenizer.json", "spiece.model"),
    "bert": ("tokenizer.json", "vocab.txt"), "electra": ("tokenizer.json", "vocab.txt"),
    "roberta": ("tokenizer.json", "vocab.json"), "modernbert": ("tokenizer.json",)}
# Every transformers class each family's model directories are written with; the first is
# write_model_dir's default.
MODEL_CLASSES: dict[str, tuple[str, ...]] = {
    "albert": ("AlbertForPreTraining", "AlbertForMaskedLM", "AlbertModel"),
    "bert": ("BertForPreTraining", "BertForMaskedLM", "BertModel"),
    "roberta": ("RobertaForMaskedLM", "RobertaModel"),
    "electra": ("ElectraForPreTraining", "ElectraForMaskedLM"),
    "xlnet": ("XLNetLMHeadModel",),
    "modernbert": ("ModernBertForMaskedLM", "ModernBertModel")}
VOCAB_SIZE = 600  # every trained vocabulary's size (the SentencePiece ones may be smaller)
MODERNBERT_PADDED = 640  # ModernBERT's config pads its vocabulary to a multiple of 64

_SLOW_CLASSES = {"albert": "AlbertTokenizer", "xlnet": "XLNetTokenizer", "bert": "BertTokenizer",
                 "electra": "ElectraTokenizer", "roberta": "RobertaTokenizer"}
_SPECIALS = {
    "albert": dict(cls_token="[CLS]", sep_token="[SEP]", pad_token="<pad>", unk_token="<unk>",
                   mask_token="[MASK]", bos_token="[CLS]", eos_token="[SEP]"),
    "xlnet": dict(cls_token="<cls>", sep_token="<sep>", pad_token="<pad>", unk_token="<unk>",
                  mask_token="<mask>", bos_token="<s>", eos_token="</s>",
                  additional_special_tokens=["<eop>", "<eod>"]),
    "bert": dict(cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]", unk_token="[UNK]",
                 mask_token="[MASK]"),
    "roberta": dict(cls_token="<s>", sep_token="</s>", pad_token="<pad>", unk_token="<unk>",
                    mask_token="<mask>", bos_token="<s>", eos_token="</s>"),
    "modernbert": dict(cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]",
                       unk_token="[UNK]", mask_token="[MASK]")}
_SPECIALS["electra"] = _SPECIALS["bert"]
_SETTINGS = {"albert": dict(do_lower_case=True, remove_space=True, keep_accents=False),
             "xlnet": dict(do_lower_case=False, remove_space=True, keep_accents=False,
                           padding_side="left"),
             "bert": dict(do_lower_case=True, strip_accents=None, tokenize_chinese_chars=True),
             "roberta": dict(add_prefix_space=False, trim_offsets=True, errors="replace")}
_SETTINGS["electra"] = _SETTINGS["bert"]


def training_sentences() -> list[str]:
    """The generated English every vocabulary here is trained on."""
    return generated_sentences(3000, seed=21)


# ---- tokenizer directories -----------------------------------------------------------------

def write_tokenizer_dir(family: str, layout: str, path: str | Path) -> Path:
    """A tokenizer directory of `family` in `layout` (TOKENIZER_LAYOUTS[family]), as
    transformers writes it; returns `path`."""
    if layout not in TOKENIZER_LAYOUTS.get(family, ()):
        raise ValueError(f"{family}: no layout {layout!r}; choose from "
                         f"{TOKENIZER_LAYOUTS.get(family)} (families: {FAMILIES})")
    path = Path(path)
    if family == "modernbert":
        return _write_modernbert(path)
    if layout != "tokenizer.json":
        return _write_slow(family, path)

    with tempfile.TemporaryDirectory() as slow:
        converted = AutoTokenizer.from_pretrained(str(_write_slow(family, Path(slow))))
        converted.save_pretrained(str(path))
    return path


def _write_slow(family: str, path: Path) -> Path:
    """The vocabulary file, tokenizer_config.json and special_tokens_map.json."""
    path.mkdir(parents=True, exist_ok=True)
    for name, source in _vocabulary(family).items():
        shutil.copyfile(source, path / name)
    specials = _SPECIALS[family]
    config = {"tokenizer_class": _SLOW_CLASSES[family], **_SETTINGS[family], **specials,
              "model_max_length": 512}
    _write_json(path / "tokenizer_config.json", config)
    _write_json(path / "special_tokens_map.json", specials)
    return path


def _write_modernbert(path: Path) -> Path:
    """ModernBERT's tokenizer: a PreTrainedTokenizerFast over a byte-level BPE whose
    tokenizer.json has [CLS] A [SEP] (B [SEP]), one token type, [MASK] eating the space
    before it, and no token types among the model inputs (ModernBERT's own files)."""
    files = _vocabulary("modernbert")
    vocab = json.loads(files["vocab.json"].read_text(encoding="utf-8"))
    merges = [tuple(line.split(" ")) for line in
              files["merges.txt"].read_text(encoding="utf-8").splitlines()
              if line and not line.startswith("#")]
    hf = HFTokenizer(BPE(vocab, merges, dropout=None, continuing_subword_prefix="",
                         end_of_word_suffix="", fuse_unk=False))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens([AddedToken(t, special=True, normalized=False, lstrip=t == "[MASK]")
                           for t in ("[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]")])
    hf.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:0 [SEP]:0",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    fast = PreTrainedTokenizerFast(tokenizer_object=hf, model_input_names=["input_ids",
                                                                           "attention_mask"],
                                   clean_up_tokenization_spaces=True, model_max_length=512,
                                   **_SPECIALS["modernbert"])
    fast.save_pretrained(str(path))
    return path


@functools.cache
def _vocabulary(family: str) -> dict[str, Path]:
    """{file name: trained file} of the family's vocabulary, trained once per process."""
    root = Path(tempfile.mkdtemp(prefix=f"hf-dirs-{family}-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    kind = {"albert": "albert", "xlnet": "xlnet", "bert": "wordpiece", "electra": "wordpiece",
            "roberta": "roberta", "modernbert": "modernbert"}[family]
    return _trained(kind, root)


def _trained(kind: str, root: Path) -> dict[str, Path]:
    sentences = training_sentences()
    if kind in ("albert", "xlnet"):

        # No text symbols: see the module docstring. XLNet keeps its reserved <eop>.
        model = train_sentencepiece([], root, layout=kind, vocab_size=VOCAB_SIZE,
                                    sentence_iterator=sentences, num_threads=2,
                                    user_defined_symbols=[])
        return {"spiece.model": model}
    if kind == "wordpiece":

        trainer = BertWordPieceTokenizer(lowercase=True)
        trainer.train_from_iterator(sentences, vocab_size=VOCAB_SIZE, show_progress=False)
        trainer.save_model(str(root))
        return {"vocab.txt": root / "vocab.txt"}
    if kind == "roberta":

        trainer = ByteLevelBPETokenizer(add_prefix_space=False)
        trainer.train_from_iterator(sentences, vocab_size=VOCAB_SIZE, show_progress=False,
                                    special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
        trainer.save_model(str(root))
        return {"vocab.json": root / "vocab.json", "merges.txt": root / "merges.txt"}

    train_bpe([], root, flavour="modernbert", vocab_size=VOCAB_SIZE, sentence_iterator=sentences)
    return {"vocab.json": root / "vocab.json", "merges.txt": root / "merges.txt"}


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


# ---- model directories -----------------------------------------------------------------------

def write_model_dir(family: str, path: str | Path, head_class: str | None = None,
                    layout: str = "tokenizer.json", seed: int = 0) -> Path:
    """A transformers model directory of `family`: `head_class` (MODEL_CLASSES[family], the
    first by default) with random weights and a small config (hidden 32-64, 2 layers,
    the tokenizer's vocabulary; ModernBERT's padded to MODERNBERT_PADDED), saved with
    save_pretrained beside its tokenizer in `layout`. ElectraForMaskedLM is ELECTRA's
    generator: hidden 32 against the discriminator's 64 (one head, FFN 128, as ELECTRA's
    generator_size 0.5 builds it), the same embedding size (32)."""

    classes = MODEL_CLASSES.get(family, ())
    head_class = head_class or (classes[0] if classes else None)
    if head_class not in classes:
        raise ValueError(f"{family}: no model class {head_class!r}; choose from {classes}")
    path = Path(path)
    write_tokenizer_dir(family, layout, path)

    vocab_size = len(AutoTokenizer.from_pretrained(str(path)))
    config = model_config(family, vocab_size, generator=head_class == "ElectraForMaskedLM")
    torch.manual_seed(seed)
    model = getattr(transformers, head_class)(config)
    model.save_pretrained(str(path))
    return path


def model_config(family: str, vocab_size: int, generator: bool = False) -> Any:
    """The small transformers config write_model_dir uses."""
    common = dict(num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                  max_position_embeddings=128)
    if family == "albert":
        return transformers.AlbertConfig(vocab_size=vocab_size, embedding_size=16,
                                         hidden_size=32, pad_token_id=0, **common)
    if family in ("bert", "roberta"):
        cls = transformers.BertConfig if family == "bert" else transformers.RobertaConfig
        ids = {} if family == "bert" else dict(pad_token_id=1, bos_token_id=0, eos_token_id=2,
                                                type_vocab_size=1)
        return cls(vocab_size=vocab_size, hidden_size=32, **ids, **common)
    if family == "electra":
        if generator:  # ELECTRA's rule for its generators: FFN 4 x, one head per 64 wide
            return transformers.ElectraConfig(
                vocab_size=vocab_size, embedding_size=32, hidden_size=32, num_hidden_layers=2,
                num_attention_heads=1, intermediate_size=128, max_position_embeddings=128)
        return transformers.ElectraConfig(vocab_size=vocab_size, embedding_size=32,
                                          hidden_size=64, **common)
    if family == "xlnet":
        return transformers.XLNetConfig(vocab_size=vocab_size, d_model=32, n_layer=2, n_head=4,
                                        d_inner=64, pad_token_id=5)
    return transformers.ModernBertConfig(
        vocab_size=MODERNBERT_PADDED, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=64, max_position_embeddings=128,
        global_attn_every_n_layers=2, local_attention=16, pad_token_id=vocab_size - 2,
        cls_token_id=vocab_size - 4, sep_token_id=vocab_size - 3,
        bos_token_id=vocab_size - 4, eos_token_id=vocab_size - 3)
