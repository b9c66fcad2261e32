"""ELECTRA (Clark et al. 2020) on the albert backbone: presets, transformers' ELECTRA layout
and fine-tuning defaults."""

from litebert.models.electra.finetune import electra_defaults
from litebert.models.electra.presets import PRESETS
from litebert.specs import ModelSpec, register_spec

SPEC = register_spec(ModelSpec(
    name="electra",
    title="ELECTRA",
    backbone="albert",
    tokenizer="sentencepiece",
    finetune=electra_defaults,
    adapter_module=f"{__name__}.adapter",
    presets=PRESETS,
))
