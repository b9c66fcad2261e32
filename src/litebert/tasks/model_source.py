"""The model directory a fine-tuning (or `litebert evaluate`) starts from: its config.json is
read once per command, by `read_model_files_of` in `finetune_config` (tasks/base.py), and
FinetuneConfig carries it (`model_files`, its config as `model_config`) to the family's
defaults, the task adapter, the check that the model reads its tokenizer's inputs and the
loading of the weights.

In a sentence-transformers directory config.json is the Transformer module's
(model.sentence_transformers.read_layout); elsewhere it is the directory's own.
"""

from __future__ import annotations

from pathlib import Path

from litebert.config import ModelConfig
from litebert.model.hub import ModelFiles, read_config, read_model_files
from litebert.model.sentence_transformers import read_layout


def config_dir(model: str | Path) -> Path:
    """The folder of the model's config.json (and weights): a sentence-transformers
    directory's Transformer module, else the directory itself."""
    layout = read_layout(model)
    return Path(model) if layout is None else layout.transformer


def read_model_files_of(model: str | Path | None) -> ModelFiles | None:
    """The model directory's config.json as loading reads it (so an ELECTRA model saved in
    ALBERT's layout is still ELECTRA), with its weights' layout; None when there is no
    readable one, which loading the model then reports in a sentence naming the file."""
    if model is None:
        return None
    try:
        return read_model_files(config_dir(model))
    except (OSError, ValueError):  # CheckpointError, ConfigError: no or a bad config.json
        return None


def model_config_of(model: str | Path, known: ModelConfig | None) -> ModelConfig:
    """`known` (the config read once, FinetuneConfig.model_config); for a config built
    without one, or whose directory had none readable, the directory's config.json read
    here, whose error names the file."""
    return known if known is not None else read_config(config_dir(model))
