"""Shared fixtures: small configs and deterministic inputs with padding."""

from __future__ import annotations

import pytest
import torch

import litebert
from litebert.tasks import table_cache
from tests import hf_dirs

VOCAB = 99


def small_config(**overrides) -> litebert.ModelConfig:
    base = dict(vocab_size=VOCAB, embedding_size=16, hidden_size=32, num_hidden_layers=4,
                num_attention_heads=4, intermediate_size=37, max_position_embeddings=64,
                classifier_dropout_prob=0.1)
    return litebert.ModelConfig.from_fields(**{**base, **overrides})


def cli_options(fields: dict) -> list[str]:
    """Config fields as the options of a command line (`max_steps=6` -> `--max-steps 6`);
    a None value is left out, as not given."""
    return [arg for key, value in fields.items() if value is not None
            for arg in (f"--{key.replace('_', '-')}", str(value))]


def randomize(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Every parameter random (LayerNorm weights around 1), so a mis-mapped tensor shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g) * 0.2
            p.copy_(noise + 1.0 if "norm" in name.lower() and name.endswith("weight") else noise)
    return model


def make_inputs(batch: int = 3, seq: int = 11, seed: int = 1) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, VOCAB, (batch, seq), generator=g)
    mask = torch.ones_like(ids)
    mask[1, seq - 4:] = 0  # padded rows
    mask[2, seq - 1:] = 0
    ids[mask == 0] = 0
    types = torch.zeros_like(ids)
    types[:, seq // 2:] = 1
    return dict(input_ids=ids, attention_mask=mask, token_type_ids=types)


def mlm_labels(inputs: dict[str, torch.Tensor], seed: int = 2) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    ids = inputs["input_ids"]
    chosen = (torch.rand(ids.shape, generator=g) < 0.3) & (inputs["attention_mask"] == 1)
    chosen[0, 1] = True
    return torch.where(chosen, ids, torch.full_like(ids, -100))


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(1234)


@pytest.fixture(autouse=True, scope="session")
def _table_cache_in_tmp(tmp_path_factory):
    """Fine-tuning's tokenized tables (tasks/table_cache.py) go to one temporary folder for
    the session, not to ~/.cache."""
    tables = tmp_path_factory.mktemp("tables")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(table_cache, "default_table_cache", lambda: tables)
        yield


@pytest.fixture(scope="session")
def hf_tokenizer_dir(tmp_path_factory):
    """hf_tokenizer_dir(family, layout="tokenizer.json"): a tokenizer directory as
    transformers writes it (tests/hf_dirs.py), written once per session; read it only."""
    made: dict[tuple[str, str], object] = {}

    def make(family: str, layout: str = "tokenizer.json"):
        if (family, layout) not in made:
            folder = tmp_path_factory.mktemp(f"hf-{family}-tokenizer")
            made[family, layout] = hf_dirs.write_tokenizer_dir(family, layout, folder)
        return made[family, layout]

    return make


@pytest.fixture(scope="session")
def hf_model_dir(tmp_path_factory):
    """hf_model_dir(family, head_class=None, layout="tokenizer.json"): a transformers model
    directory with random weights and its tokenizer (tests/hf_dirs.py), written once per
    session; read it only (copy it to change it)."""
    made: dict[tuple[str, str | None, str], object] = {}

    def make(family: str, head_class: str | None = None, layout: str = "tokenizer.json"):
        key = (family, head_class, layout)
        if key not in made:
            folder = tmp_path_factory.mktemp(f"hf-{family}-model")
            made[key] = hf_dirs.write_model_dir(family, folder, head_class, layout)
        return made[key]

    return make
