"""litebert's own layout, for what no transformers family holds (see adapter.py), and the
presets saved in it; ALBERT's fine-tuning defaults. Its models build on any backbone:
config.json's `backbone` names it (ALBERT's when absent)."""

from litebert.models.albert.finetune import albert_defaults
from litebert.models.litebert.presets import PRESETS
from litebert.specs import ModelSpec, register_spec

SPEC = register_spec(ModelSpec(
    name="litebert",
    title="litebert",
    backbone="albert",
    tokenizer="sentencepiece",
    finetune=albert_defaults,
    adapter_module=f"{__name__}.adapter",
    presets=PRESETS,
))
