"""Model directories: round trips, our own layout, and errors that name file and key."""

from __future__ import annotations

import json
import logging
import os
import stat

import pytest
import torch
from safetensors.torch import load_file, save_file

import litebert
from litebert import files
from litebert.model.hub import CheckpointError
from tests.helpers.models import outputs_equal, randomize, small_config


@pytest.mark.parametrize("sharing", ["attention", "ffn"])
def test_partial_sharing_round_trips_in_own_layout(tmp_path, caplog, sharing):
    model = randomize(litebert.EncoderForPreTraining(small_config(sharing=sharing)))
    with caplog.at_level(logging.WARNING, logger="litebert"):
        model.save_pretrained(tmp_path)
    assert "no transformers equivalent" in caplog.text
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == "litebert"
    again = litebert.EncoderForPreTraining.from_pretrained(tmp_path)
    assert again.config.sharing == sharing
    outputs_equal(model, again)


def test_bare_backbone_saves_without_prefix_and_loads_under_heads(tmp_path, caplog):
    backbone = randomize(litebert.AlbertModel(small_config()))
    backbone.save_pretrained(tmp_path)
    keys = load_file(tmp_path / "model.safetensors")
    assert "embeddings.word_embeddings.weight" in keys
    with caplog.at_level(logging.WARNING, logger="litebert"):
        clf = litebert.EncoderForSequenceClassification.from_pretrained(tmp_path, num_labels=5)
    assert "newly initialised" in caplog.text and "classifier.weight" in caplog.text
    assert clf.classifier.out_features == 5
    outputs_equal(backbone, clf.backbone)
    with pytest.raises(CheckpointError, match="missing 2 key.*classifier"):
        litebert.EncoderForSequenceClassification.from_pretrained(tmp_path, strict=True)


def test_unused_heads_in_the_file_are_fine(tmp_path):
    full = randomize(litebert.EncoderForPreTraining(small_config()))
    full.save_pretrained(tmp_path)
    backbone = litebert.AlbertModel.from_pretrained(tmp_path)
    outputs_equal(full.backbone, backbone)


def test_missing_directory_config_and_weights(tmp_path):
    with pytest.raises(CheckpointError, match="not a directory"):
        litebert.AlbertModel.from_pretrained(tmp_path / "nope")
    with pytest.raises(CheckpointError, match="no config.json"):
        litebert.AlbertModel.from_pretrained(tmp_path)
    small_config().save(tmp_path)
    with pytest.raises(CheckpointError, match="no weights.*model.safetensors"):
        litebert.AlbertModel.from_pretrained(tmp_path)


def _edit_weights(directory, edit) -> None:
    path = directory / "model.safetensors"
    tensors = load_file(path)
    edit(tensors)
    save_file(tensors, path, {"format": "pt"})


def test_shape_mismatch_names_file_key_and_both_shapes(tmp_path):
    litebert.EncoderForPreTraining(small_config()).save_pretrained(tmp_path)
    key = "albert.encoder.embedding_hidden_mapping_in.weight"

    def shrink(t):
        t[key] = t[key][:, :8].contiguous()
    _edit_weights(tmp_path, shrink)
    with pytest.raises(CheckpointError, match=rf"model.safetensors: {key} has shape \(32, 8\)"
                                              r".*expects \(32, 16\)"):
        litebert.EncoderForPreTraining.from_pretrained(tmp_path)


def test_unexpected_key_is_an_error(tmp_path):
    litebert.EncoderForPreTraining(small_config()).save_pretrained(tmp_path)
    _edit_weights(tmp_path, lambda t: t.update({"albert.encoder.mystery.weight": torch.ones(2)}))
    with pytest.raises(CheckpointError, match="unexpected key albert.encoder.mystery.weight"):
        litebert.EncoderForPreTraining.from_pretrained(tmp_path)


def test_missing_backbone_key_is_an_error_even_when_not_strict(tmp_path):
    litebert.EncoderForPreTraining(small_config()).save_pretrained(tmp_path)
    _edit_weights(tmp_path, lambda t: t.pop("albert.embeddings.LayerNorm.weight"))
    with pytest.raises(CheckpointError, match="missing 1 key.*embeddings.LayerNorm.weight"):
        litebert.EncoderForPreTraining.from_pretrained(tmp_path)


def test_group_count_mismatch_is_reported(tmp_path):
    litebert.AlbertModel(small_config(num_hidden_groups=2)).save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    config["num_hidden_groups"] = 1
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="unexpected key .*albert_layer_groups.1"):
        litebert.AlbertModel.from_pretrained(tmp_path)


def test_pytorch_bin_is_read_with_weights_only(tmp_path):
    model = randomize(litebert.EncoderForPreTraining(small_config()))
    model.save_pretrained(tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    (tmp_path / "model.safetensors").unlink()
    torch.save(tensors, tmp_path / "pytorch_model.bin")
    outputs_equal(model, litebert.EncoderForPreTraining.from_pretrained(tmp_path))


class Payload:  # anything but tensors and containers must never be unpickled
    def __reduce__(self):
        return (print, ("unpickled!",))


def test_pickled_objects_are_refused(tmp_path, capsys):
    small_config().save(tmp_path)
    torch.save({"x": Payload()}, tmp_path / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match="pytorch_model.bin: not a plain tensor"):
        litebert.AlbertModel.from_pretrained(tmp_path)
    assert "unpickled!" not in capsys.readouterr().out


def test_sharded_safetensors(tmp_path):
    model = randomize(litebert.AlbertModel(small_config()))
    model.save_pretrained(tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    (tmp_path / "model.safetensors").unlink()
    keys = sorted(tensors)
    shards = {"a.safetensors": keys[::2], "b.safetensors": keys[1::2]}
    for name, part in shards.items():
        save_file({k: tensors[k] for k in part}, tmp_path / name, {"format": "pt"})
    index = {"weight_map": {k: n for n, part in shards.items() for k in part}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    outputs_equal(model, litebert.AlbertModel.from_pretrained(tmp_path))


def test_save_is_atomic_and_leaves_no_temp_files(tmp_path):
    litebert.AlbertModel(small_config()).save_pretrained(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "model.safetensors"]


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_saved_files_follow_the_umask(tmp_path, monkeypatch, umask):
    # safetensors writes its file 0600; a model on a shared cluster must be readable as the
    # umask says, like every other file of the directory.
    monkeypatch.setattr(files, "_UMASK", umask)
    previous = os.umask(umask)
    try:
        litebert.AlbertModel(small_config()).save_pretrained(tmp_path)
    finally:
        os.umask(previous)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()}
    assert modes == {"config.json": 0o666 & ~umask, "model.safetensors": 0o666 & ~umask}
