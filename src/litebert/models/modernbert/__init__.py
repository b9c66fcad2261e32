"""ModernBERT (Warner et al. 2024): the "modernbert" backbone (model.py), its settings,
presets, transformers' ModernBERT layout, fine-tuning defaults and its BPE tokenizer."""

from litebert.models.modernbert.config import ModernBertBackboneConfig
from litebert.models.modernbert.finetune import modernbert_defaults
from litebert.models.modernbert.presets import PRESETS
from litebert.specs import ModelSpec, register_spec

SPEC = register_spec(ModelSpec(
    name="modernbert",
    title="ModernBERT",
    backbone="modernbert",
    tokenizer="modernbert",
    finetune=modernbert_defaults,
    adapter_module=f"{__name__}.adapter",
    presets=PRESETS,
    backbone_config=ModernBertBackboneConfig,
    backbone_module=f"{__name__}.model",
))
