"""`--from` on every family, both ways: a directory transformers wrote (random weights, a small
config, its tokenizer) continues for 10 steps, and its export loads in transformers as the same
class, with the same keys and the directory's own tokenizer files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import transformers
from safetensors.torch import load_file

from litebert.data.builder import BuildConfig, build
from litebert.tokenization.added_tokens import added_token_pieces
from litebert.train.pretrain import Trainer, pretrain
from litebert.train.run_config import PretrainConfig
from tests.data.builds import write_corpus
from tests.hf_dirs import MODEL_CLASSES

# How each family's data is built (its paper's pre-training data) and which objective trains it.
DATA = {
    "albert": dict(objective="sop"),
    "bert": dict(objective="nsp"),
    "roberta": dict(objective="none", packing="full-sentences"),
    "electra": dict(objective="none"),
    "xlnet": dict(objective="none", packing="streams", reuse_len=32),
    "modernbert": dict(objective="none", packing="full-sentences", masked_lm_prob=0.3),
}
OBJECTIVE = {"electra": {"name": "electra", "generator_size": 0.5},
             "xlnet": {"name": "plm", "perm_size": 32}}
CASES = [(family, cls) for family, classes in MODEL_CLASSES.items() for cls in classes
         if cls != "ElectraForMaskedLM"]  # ELECTRA's generator comes with its discriminator


@pytest.fixture(scope="module")
def family_data(tmp_path_factory, hf_model_dir):
    """family -> a data directory built with that family's model directory's tokenizer."""
    root = tmp_path_factory.mktemp("families")
    corpus = write_corpus(root / "corpus.txt", docs=60)
    made: dict[str, Path] = {}

    def make(family: str) -> Path:
        if family not in made:
            build([corpus], hf_model_dir(family), root / family, BuildConfig(
                max_seq_length=64, format="bert", heldout_fraction=0.1, **DATA[family]))
            made[family] = root / family
        return made[family]

    return make


def continued(family: str, source: Path, data: Path, out: Path, objective=None, **kw) -> Path:
    cfg = PretrainConfig(start_from=str(source), data=str(data), out=str(out),
                         objective=objective or OBJECTIVE.get(family, {"name": "mlm"}),
                         batch_size=8,
                         micro_batch_size=8, max_steps=10, warmup_steps=2, lr=1e-3,
                         optimizer="adamw", log_every=5, eval_every=10, save_every=10,
                         eval_instances=16, **kw)
    pretrain(cfg)
    return out / "export"


def same_directory_kind(export: Path, source: Path, class_name: str) -> None:
    """The export is `class_name` to transformers, with the source's keys and tokenizer."""
    config = json.loads((export / "config.json").read_text())
    assert config["architectures"] == [class_name]
    getattr(transformers, class_name).from_pretrained(export)
    assert set(load_file(export / "model.safetensors")) == \
        set(load_file(source / "model.safetensors"))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        assert (export / name).read_bytes() == (source / name).read_bytes()
    theirs = transformers.AutoTokenizer.from_pretrained(export)
    assert theirs.get_vocab() == transformers.AutoTokenizer.from_pretrained(source).get_vocab()


@pytest.mark.parametrize(("family", "class_name"), CASES)
def test_a_transformers_directory_continues_and_comes_back_as_itself(
        family, class_name, hf_model_dir, family_data, tmp_path):
    source = hf_model_dir(family, class_name)
    generator = hf_model_dir(family, "ElectraForMaskedLM") if family == "electra" else None
    export = continued(family, source, family_data(family), tmp_path / "run",
                       generator_from=str(generator) if generator else None)
    if family != "electra":
        same_directory_kind(export, source, class_name)
        return
    same_directory_kind(export / "discriminator", source, class_name)
    same_directory_kind(export / "generator", generator, "ElectraForMaskedLM")


def test_an_electra_generator_of_another_shape_is_a_sentence(hf_model_dir, family_data,
                                                             tmp_path):
    said = r"hidden_size 32 there, 16 here.*set objective.generator_size=0\.5"
    with pytest.raises(ValueError, match=said):
        continued("electra", hf_model_dir("electra"), family_data("electra"), tmp_path / "run",
                  generator_from=str(hf_model_dir("electra", "ElectraForMaskedLM")),
                  objective={"name": "electra", "generator_size": 0.25})


def test_added_words_grow_the_model_from_their_pieces(hf_model_dir, tmp_path):
    """data build --add-tokens, then --from: each new row is the mean of the word's former
    pieces' rows, and the export (a larger vocab_size) is the model and tokenizer
    transformers loads with the new ids."""
    source = hf_model_dir("bert", "BertForMaskedLM")
    words = tmp_path / "words.txt"
    words.write_text("ozempic\nblockchains\n")
    corpus = write_corpus(tmp_path / "corpus.txt", docs=40)
    text = corpus.read_text().replace(" the ", " the ozempic blockchains ")
    corpus.write_text(text)
    data = tmp_path / "data"
    build([corpus], source, data, BuildConfig(max_seq_length=64, format="bert",
                                              heldout_fraction=0.1, objective="none"),
          add_tokens=words)
    pieces = added_token_pieces(data / "tokenizer")
    cfg = PretrainConfig(start_from=str(source), data=str(data), out=str(tmp_path / "run"),
                         batch_size=8, micro_batch_size=8, max_steps=2, warmup_steps=1,
                         optimizer="adamw", log_every=1, eval_every=2, save_every=2,
                         eval_instances=16)
    before = load_file(source / "model.safetensors")
    rows = before["bert.embeddings.word_embeddings.weight"]  # (V, E)
    model = Trainer(cfg).model.state_dict()
    grown = model["backbone.embeddings.word_embeddings.weight"]
    assert grown.shape[0] == rows.shape[0] + len(pieces)
    for new_id, old_ids in pieces.items():
        assert torch.allclose(grown[new_id], rows[old_ids].mean(0))
    assert torch.equal(grown[: rows.shape[0]], rows)
    pretrain(cfg)
    export = tmp_path / "run" / "export"
    theirs = transformers.BertForMaskedLM.from_pretrained(export)
    assert theirs.config.vocab_size == rows.shape[0] + len(pieces)
    tok = transformers.AutoTokenizer.from_pretrained(export)
    assert tok.convert_tokens_to_ids("ozempic") in pieces
