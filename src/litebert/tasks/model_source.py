"""The model directory a fine-tuning (or `litebert evaluate`) starts from: its config.json is
read once per command, by `read_model_config` in `finetune_config` (tasks/base.py), and
FinetuneConfig carries the ModelConfig (`model_config`) to the family's defaults, the task
adapter and the check that the model reads its tokenizer's inputs.

In a sentence-transformers directory config.json is the Transformer module's
(model.sentence_transformers.read_layout); elsewhere it is the directory's own.
"""

from __future__ import annotations

from pathlib import Path

from litebert.config import ModelConfig
from litebert.model.hub import read_config
from litebert.model.sentence_transformers import read_layout


def config_dir(model: str | Path) -> Path:
    """The folder of the model's config.json (and weights): a sentence-transformers
    directory's Transformer module, else the directory itself."""
    layout = read_layout(model)
    return Path(model) if layout is None else layout.transformer


def read_model_config(model: str | Path | None) -> ModelConfig | None:
    """The model directory's config (config.json as loading reads it, so an ELECTRA model
    saved in ALBERT's layout is still ELECTRA); None when there is no readable one, which
    loading the model then reports in a sentence naming the file."""
    if model is None:
        return None
    try:
        return read_config(config_dir(model))
    except (OSError, ValueError):  # CheckpointError, ConfigError: no or a bad config.json
        return None


def model_config_of(model: str | Path, known: ModelConfig | None) -> ModelConfig:
    """`known` (the config read once, FinetuneConfig.model_config); for a config built
    without one, or whose directory had none readable, the directory's config.json read
    here, whose error names the file."""
    return known if known is not None else read_config(config_dir(model))
