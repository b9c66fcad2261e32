"""Random replacements never draw a special id, whatever the vocabulary puts where: the
tokenizer's special_mask / replacement_ids, and masks of built data (static and dynamic)."""

from __future__ import annotations

import io
import string

import numpy as np
import pytest

from litebert.data.builder import BuildConfig, build
from litebert.data.loader import PretrainingDataset
from litebert.tokenization import ALBERT_USER_SYMBOLS, Tokenizer
from tests.data.builds import WORDS, write_corpus
from tests.fixtures_sp import generated_paragraphs


def bert_layout_vocab(path):
    """A vocab.txt laid out as bert-base's: [PAD] 0, [unused0..98] 1-99, [UNK] [CLS] [SEP]
    [MASK] 100-103, then characters, continuations and whole words."""
    letters = string.ascii_lowercase
    lines = ["[PAD]", *(f"[unused{i}]" for i in range(99)), "[UNK]", "[CLS]", "[SEP]", "[MASK]",
             *letters, ".", *(f"##{c}" for c in letters), *sorted(set(WORDS) - set(letters))]
    path.mkdir(parents=True, exist_ok=True)
    (path / "vocab.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, lines


def sentencepiece_dir(path, **trainer_args):
    """A small SentencePiece model with its specials where `trainer_args` put them."""
    import sentencepiece as spm

    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(generated_paragraphs(200)),
                                   model_writer=buf, vocab_size=150, minloglevel=2,
                                   **trainer_args)
    path.mkdir(parents=True, exist_ok=True)
    (path / "spiece.model").write_bytes(buf.getvalue())
    return path


# ---- the tokenizer says which ids are special ------------------------------------------------

def test_wordpiece_replacement_ids_skip_every_bracketed_token(tmp_path):
    directory, lines = bert_layout_vocab(tmp_path / "wp")
    tok = Tokenizer.from_pretrained(directory)
    bracketed = [i for i, t in enumerate(lines) if t.startswith("[") and t.endswith("]")]
    assert tok.mask_token_id == 103 and len(bracketed) == 104
    assert np.flatnonzero(tok.special_mask).tolist() == bracketed
    assert tok.replacement_ids.tolist() == list(range(104, len(lines)))
    assert not tok.replacement_ids.flags.writeable


def test_sentencepiece_replacement_ids_skip_pad_unknown_and_control_pieces(tmp_path):
    """Specials in unusual places: controls at 0-2, <unk> at 3, <pad> at 7, user symbols
    (real text) between them."""
    directory = sentencepiece_dir(tmp_path / "sp", pad_id=7, unk_id=3, bos_id=-1, eos_id=-1,
                                  control_symbols=["[CLS]", "[SEP]", "[MASK]"],
                                  user_defined_symbols=["(", ")"])
    tok = Tokenizer.from_pretrained(directory)
    assert (tok.cls_token_id, tok.unk_token_id, tok.pad_token_id) == (0, 3, 7)
    assert np.flatnonzero(tok.special_mask).tolist() == [0, 1, 2, 3, 7]
    assert tok.replacement_ids.tolist() == [4, 5, 6, *range(8, len(tok))]
    assert tok.convert_ids_to_tokens([4, 5]) == ["(", ")"]  # user symbols stay drawable


def test_sentencepiece_unused_pieces_are_special(tmp_path):
    pytest.importorskip("google.protobuf")
    from sentencepiece import sentencepiece_model_pb2 as model_pb2

    directory = sentencepiece_dir(tmp_path / "sp")
    proto = model_pb2.ModelProto()
    proto.ParseFromString((directory / "spiece.model").read_bytes())
    proto.pieces[40].type = model_pb2.ModelProto.SentencePiece.UNUSED
    (directory / "spiece.model").write_bytes(proto.SerializeToString())
    tok = Tokenizer.from_pretrained(directory)
    assert tok.special_mask[40] and 40 not in tok.replacement_ids
    assert 41 in tok.replacement_ids


def test_albert_layout_keeps_the_range_above_the_five_specials(corpus_and_tokenizer):
    """ids 0-4 special, user symbols from 5 on drawable: the same ids as before, so static
    masks of ALBERT-layout data come out byte for byte as they did."""
    _, directory = corpus_and_tokenizer
    tok = Tokenizer.from_pretrained(directory)
    assert tok.replacement_ids.tolist() == list(range(5, len(tok)))
    assert tok.convert_ids_to_tokens(5) == ALBERT_USER_SYMBOLS[0]


# ---- built data -------------------------------------------------------------------------------

@pytest.mark.parametrize("masking", ["static", "dynamic"])
def test_bert_vocab_masks_never_draw_a_special_id(tmp_path, masking):
    corpus = write_corpus(tmp_path / "corpus.txt", docs=200, seed=4)
    directory, lines = bert_layout_vocab(tmp_path / "wp")
    special = {i for i, t in enumerate(lines) if t.startswith("[") and t.endswith("]")}
    out = tmp_path / "data"
    build([corpus], directory, out, BuildConfig(max_seq_length=64, format="bert",
                                                masking=masking, heldout_fraction=0.0))
    ds = PretrainingDataset(out)
    drawn = []
    for i in range(len(ds)):
        item = ds[i]
        ids, labels = item["input_ids"].numpy(), item["labels"].numpy()
        hit = labels != -100
        random = hit & (ids != 103) & (ids != labels)
        drawn += ids[random].tolist()
    assert len(drawn) > 200, "too few random replacements to tell"
    assert not special & set(drawn), sorted(special & set(drawn))[:10]
    assert set(drawn) <= set(range(104, len(lines)))
