"""ALBERT (Lan et al. 2020): the "albert" backbone (model.py, which BERT, ELECTRA and RoBERTa
build on too), its settings, presets, transformers' ALBERT layout and fine-tuning defaults."""

from litebert.models.albert.config import AlbertBackboneConfig
from litebert.models.albert.finetune import albert_defaults
from litebert.models.albert.presets import PRESETS
from litebert.specs import ModelSpec, register_spec

SPEC = register_spec(ModelSpec(
    name="albert",
    title="ALBERT",
    backbone="albert",
    tokenizer="sentencepiece",
    finetune=albert_defaults,
    adapter_module=f"{__name__}.adapter",
    presets=PRESETS,
    backbone_config=AlbertBackboneConfig,
    backbone_module=f"{__name__}.model",
))
