"""`litebert pretrain --from DIR`: a run that starts from a model directory's weights and shape.

The directories are written by transformers (random weights, a small config) with the data's
own SentencePiece vocabulary beside them, as a user's downloaded model would be.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest
import torch
import transformers
from safetensors.torch import load_file

from litebert.cli import main
from litebert.data.builder import BuildConfig, build
from litebert.model.hub import read_canonical
from litebert.tokenization import Tokenizer, train_sentencepiece
from litebert.train import checkpoint
from litebert.train.pretrain import Trainer, pretrain
from litebert.train.run_config import PretrainConfig
from litebert.train.start_from import grouped
from litebert.train.state import export_run
from tests.data.builds import write_corpus

HF_ALBERT = dict(embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=37, max_position_embeddings=64)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, Path]:
    """Two data directories of 64 tokens: one with a vocabulary, one with another (a symbol
    more shifts its ids)."""
    root = tmp_path_factory.mktemp("start-from")
    text = write_corpus(root / "corpus.txt", docs=60)
    out = {}
    for name, symbols in (("data", None), ("other", ["<extra>"])):  # other: shifted ids
        tok = train_sentencepiece([text], root / f"tok-{name}", vocab_size=120,
                                  user_defined_symbols=symbols).parent
        build([text], tok, root / name, BuildConfig(max_seq_length=64, format="bert",
                                                    heldout_fraction=0.1))
        out[name] = root / name
    return out


def albert_dir(path: Path, data: Path, cls=transformers.AlbertForMaskedLM,
               dtype: torch.dtype = torch.float32) -> Path:
    """A transformers ALBERT directory of class `cls` with the data's tokenizer beside it."""
    vocab = len(Tokenizer.from_pretrained(data / "tokenizer"))
    torch.manual_seed(0)
    model = cls(transformers.AlbertConfig(vocab_size=vocab, **HF_ALBERT)).to(dtype)
    model.save_pretrained(path)
    for f in (data / "tokenizer").iterdir():
        shutil.copy(f, path / f.name)
    return path


def run(data: Path, out: Path, source: Path, **kw) -> PretrainConfig:
    values = dict(start_from=str(source), data=str(data), out=str(out), batch_size=8,
                  micro_batch_size=8, max_steps=4, warmup_steps=1, lr=1e-3, optimizer="adamw",
                  log_every=2, eval_every=4, save_every=2, eval_instances=16)
    return PretrainConfig(**{**values, **kw})


def test_a_masked_lm_continues_and_exports_as_the_class_it_was(corpus, tmp_path, caplog):
    source = albert_dir(tmp_path / "mlm", corpus["data"])
    (source / "README.md").write_text("the user's own notes\n")
    before = load_file(source / "model.safetensors")
    with caplog.at_level(logging.INFO, logger="litebert"):
        pretrain(run(corpus["data"], tmp_path / "run", source))
    # The pair head and pooler the SOP data asks for are new, and said so in one line.
    started = [r.message for r in caplog.records if r.message.startswith("started from")]
    assert len(started) == 1 and "sop_classifier.classifier.* (2)" in started[0]
    assert "backbone.pooler.* (2)" in started[0] and "loaded" in started[0]
    export = tmp_path / "run" / "export"
    config = json.loads((export / "config.json").read_text())
    assert config["architectures"] == ["AlbertForMaskedLM"]
    theirs = transformers.AlbertForMaskedLM.from_pretrained(export)
    assert set(load_file(export / "model.safetensors")) == set(before)
    assert (export / "README.md").read_text() == "the user's own notes\n"
    for name in ("spiece.model", "tokenizer.json"):
        assert (export / name).read_bytes() == (source / name).read_bytes()
    # Trained, not copied: the weights moved from the source's.
    moved = theirs.albert.embeddings.word_embeddings.weight
    assert not torch.equal(moved, before["albert.embeddings.word_embeddings.weight"])
    # The trained SOP head is kept beside the weights, litebert's layout.
    assert "sop_classifier.classifier.weight" in load_file(export / "litebert_heads.safetensors")
    # `litebert export RUN` later gives the same kind of directory.
    again = export_run(tmp_path / "run", tmp_path / "again")
    assert json.loads((again / "config.json").read_text())["architectures"] == \
        ["AlbertForMaskedLM"]
    assert (again / "README.md").is_file()


def test_the_model_starts_as_the_directory_is(corpus, tmp_path):
    """Every tensor of the directory is in the built model, exactly; only the heads it
    lacks are new."""
    source = albert_dir(tmp_path / "pt", corpus["data"], transformers.AlbertForPreTraining)
    canonical = read_canonical(source)[1]
    model = Trainer(run(corpus["data"], tmp_path / "run", source)).model.state_dict()
    assert set(canonical) == set(model)  # a pre-training directory has every head
    assert all(torch.equal(model[k], v) for k, v in canonical.items())


def test_the_same_command_continues_its_own_checkpoints(corpus, tmp_path):
    source = albert_dir(tmp_path / "mlm", corpus["data"])
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    args = ["pretrain", "--from", str(source), "--data", str(corpus["data"]), "--batch-size",
            "8", "--micro-batch-size", "8", "--max-steps", "4", "--warmup-steps", "1",
            "--optimizer", "adamw", "--log-every", "2", "--save-every", "2",
            "--eval-every", "4", "--eval-instances", "16"]
    assert main([*args, "--out", str(whole)]) == 0
    assert main([*args, "--out", str(cut)]) == 0
    shutil.rmtree(checkpoint.list_checkpoints(cut)[-1])  # as if killed after step 2
    assert main([*args, "--out", str(cut)]) == 0
    a, b = (load_file(run_dir / "export" / "model.safetensors") for run_dir in (whole, cut))
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_weights_and_pickled_tensors_load(corpus, tmp_path, dtype):
    source = albert_dir(tmp_path / "half", corpus["data"], dtype=dtype)
    state = load_file(source / "model.safetensors")
    assert next(iter(state.values())).dtype == dtype
    (source / "model.safetensors").unlink()
    torch.save(state, source / "pytorch_model.bin")  # plain tensors: weights_only reads it
    pretrain(run(corpus["data"], tmp_path / "run", source, max_steps=2, eval_every=2))
    assert (tmp_path / "run" / "export" / "model.safetensors").is_file()


def test_dropout_may_change_but_a_shape_may_not(corpus, tmp_path):
    source = albert_dir(tmp_path / "mlm", corpus["data"])
    pretrain(run(corpus["data"], tmp_path / "ok", source, max_steps=2, eval_every=2,
                 model_overrides={"hidden_dropout_prob": 0.2}))
    with pytest.raises(ValueError, match=r"model_overrides .*intermediate_size.* shapes"):
        pretrain(run(corpus["data"], tmp_path / "bad", source,
                     model_overrides={"intermediate_size": 48}))
    assert not (tmp_path / "bad").exists()


def _no_weights(d: Path) -> None:
    (d / "model.safetensors").unlink()


def _no_tokenizer(d: Path) -> None:
    for name in ("spiece.model", "tokenizer.json"):
        (d / name).unlink()


def _unknown_type(d: Path) -> None:
    config = json.loads((d / "config.json").read_text())
    (d / "config.json").write_text(json.dumps({**config, "model_type": "gpt2"}))


def _truncated(d: Path) -> None:
    data = (d / "model.safetensors").read_bytes()
    (d / "model.safetensors").write_bytes(data[: len(data) // 2])


def _pickle(d: Path) -> None:
    (d / "model.safetensors").unlink()
    torch.save({"x": torch.zeros(2), "note": object()}, d / "pytorch_model.bin")


@pytest.mark.parametrize(("damage", "said"), [
    (_no_weights, "no weights"), (_no_tokenizer, "no tokenizer files"),
    (_unknown_type, "unknown model_type 'gpt2'"), (_truncated, "unreadable safetensors"),
    (_pickle, "not a plain tensor checkpoint")])
def test_bad_directories_are_one_sentence_and_nothing_is_written(corpus, tmp_path, capsys,
                                                                 damage, said):
    source = albert_dir(tmp_path / "bad", corpus["data"])
    damage(source)
    out = tmp_path / "run"
    code = main(["pretrain", "--from", str(source), "--data", str(corpus["data"]), "--out",
                 str(out)])
    err = [x for x in capsys.readouterr().err.splitlines() if x.startswith("litebert ")]
    assert code == 2 and len(err) == 1 and said in err[0] and str(source) in err[0], err
    assert not out.exists()


def test_data_of_another_vocabulary_is_refused_naming_both(corpus, tmp_path, capsys):
    source = albert_dir(tmp_path / "mlm", corpus["data"])
    code = main(["pretrain", "--from", str(source), "--data", str(corpus["other"]), "--out",
                 str(tmp_path / "run")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and str(corpus["other"]) in err and str(source) in err
    assert "another vocabulary" in err and not (tmp_path / "run").exists()


def test_grouped_counts_tensors_per_module():
    keys = ["a.layer.0.ffn.weight", "a.layer.1.ffn.weight", "a.layer.1.ffn.bias", "head.bias"]
    assert grouped(keys) == "a.layer.N.ffn.* (3), head.bias"


def test_a_run_directory_and_its_export_are_both_sources(corpus, tmp_path, caplog):
    source = albert_dir(tmp_path / "mlm", corpus["data"])
    pretrain(run(corpus["data"], tmp_path / "first", source, max_steps=2, eval_every=2))
    # The first run's export holds the SOP head and pooler beside the weights: a run from
    # the run directory loads them too, so nothing of its model starts new.
    with caplog.at_level(logging.INFO, logger="litebert"):
        pretrain(run(corpus["data"], tmp_path / "second", tmp_path / "first", max_steps=2,
                     eval_every=2))
    started = [r.message for r in caplog.records if r.message.startswith("started from")]
    assert len(started) == 1 and "newly initialised" not in started[0], started
    assert str(tmp_path / "first" / "export") in started[0]
    # A checkpoint is not a model directory: the sentence says what to do with it.
    step = checkpoint.list_checkpoints(tmp_path / "first")[-1]
    with pytest.raises(ValueError, match=r"a training checkpoint.*--resume"):
        pretrain(run(corpus["data"], tmp_path / "third", step))


def test_a_continued_model_goes_on_into_a_new_phase(corpus, tmp_path, caplog):
    """--new-phase after a --from run continues its checkpoint (the directory's weights are
    not read again) and still exports the directory's class."""
    source = albert_dir(tmp_path / "mlm", corpus["data"])
    first = run(corpus["data"], tmp_path / "run", source, max_steps=2, eval_every=2)
    pretrain(first)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="litebert"):
        pretrain(PretrainConfig(**{**first.__dict__, "max_steps": 4, "new_phase": True,
                                   "lr": 5e-4}))
    assert not any(r.message.startswith("started from") for r in caplog.records)
    steps = [json.loads(x)["step"] for x in
             (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert sorted(set(steps)) == [2, 4]
    config = json.loads((tmp_path / "run" / "export" / "config.json").read_text())
    assert config["architectures"] == ["AlbertForMaskedLM"]
