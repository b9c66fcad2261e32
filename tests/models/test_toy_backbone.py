"""A seventh backbone, defined entirely in tests (tests/models/toy: a package and its
registration, no file of src touched), goes through pre-training, export, loading and
fine-tuning like the built-in ones."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
import torch

import tests.models.toy  # noqa: F401 (registers the "toy" spec)
from litebert.config import PRESETS, ModelConfig
from litebert.model import AutoModelForMaskedLM, AutoModelForSequenceClassification
from litebert.model.backbone import backbone_of, build_backbone
from litebert.model.heads import EncoderForMaskedLM
from litebert.tasks.base import finetune_config
from litebert.tasks.finetune import finetune
from litebert.train import checkpoint
from litebert.train.pretrain import pretrain
from litebert.train.state import load_model_state
from tests.helpers.finetune import fast, sst2_dir
from tests.helpers.pretrain import run_config, tiny_data
from tests.models.toy.model import ToyModel


@pytest.fixture(scope="module")
def mlm_data(tmp_path_factory):
    """Packed text without a sentence-pair task: MLM alone, as a backbone without a pooler
    pre-trains."""
    return tiny_data(tmp_path_factory.mktemp("toy"), objective="none",
                     packing="full-sentences")


def test_the_toy_preset_builds_the_toy_backbone():
    config = ModelConfig.from_preset("toy-tiny", vocab_size=50)
    assert "toy-tiny" in PRESETS and isinstance(build_backbone(config), ToyModel)
    assert ModelConfig.from_dict(config.to_dict()) == config  # litebert's own layout


def test_a_backbone_from_tests_pretrains_exports_loads_and_finetunes(mlm_data, tmp_path):
    run = tmp_path / "run"
    pretrain(run_config(mlm_data, run, model="toy-tiny", model_overrides={}, objective="mlm",
                        max_steps=4, eval_every=2, save_every=2))
    export = run / "export"
    written = json.loads((export / "config.json").read_text())
    assert (written["model_type"], written["backbone"]) == ("litebert", "toy")

    loaded = AutoModelForMaskedLM.from_pretrained(export).eval()
    assert isinstance(backbone_of(loaded), ToyModel)
    state, saved = load_model_state(checkpoint.latest(run))
    trained = EncoderForMaskedLM(ModelConfig.from_dict(saved["model_config"]))
    trained.load_state_dict(state)
    ids = torch.randint(5, loaded.config.vocab_size, (2, 12))
    with torch.no_grad():
        torch.testing.assert_close(loaded(ids).logits, trained.eval()(ids).logits,
                                   atol=0, rtol=0)

    out = tmp_path / "sst2"
    result = finetune(finetune_config(task="sst2", data=str(sst2_dir(tmp_path / "SST-2")),
                                      model=str(export), out=str(out),
                                      **fast(max_steps=20, eval_every=10)))
    assert 0.0 <= result["dev"]["accuracy"] <= 1.0
    tuned = AutoModelForSequenceClassification.from_pretrained(out / "model")
    assert isinstance(backbone_of(tuned), ToyModel)
    assert json.loads((out / "results.json").read_text())["defaults"]["family"] == "litebert"


def test_the_registry_imports_a_package_only_when_asked():
    """ModelConfig and config.json need only the packages of the families they name: nothing
    of training, tasks or heads, in a fresh interpreter, and no torch until an adapter reads a
    config.json; the registering package is imported by the lookup itself."""
    code = textwrap.dedent("""
        import pathlib, sys, tempfile
        from litebert.config import ModelConfig
        ModelConfig(); ModelConfig.from_preset("xlnet-tiny")
        print("litebert.models.xlnet" in sys.modules, "torch" in sys.modules)
        from litebert.specs import all_specs
        root = pathlib.Path(tempfile.mkdtemp())
        for spec in all_specs():  # a config.json of each family, in its layout
            config = ModelConfig.from_preset(next(iter(spec.presets)))
            (root / spec.name).mkdir()
            read = ModelConfig.from_json_file(config.save(root / spec.name))
            assert read.to_dict() == config.to_dict() and read.model_type == spec.name
        above = ("litebert.model", "litebert.model.heads", "litebert.tasks", "litebert.train")
        print([name for name in above if name in sys.modules])
        """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.splitlines() == ["True False", "[]"]
