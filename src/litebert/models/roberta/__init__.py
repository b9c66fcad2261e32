"""RoBERTa (Liu et al. 2019) on the albert backbone: presets, transformers' RoBERTa layout,
fine-tuning defaults and its byte-level BPE tokenizer."""

from litebert.models.roberta.finetune import roberta_defaults
from litebert.models.roberta.presets import PRESETS
from litebert.specs import ModelSpec, register_spec

SPEC = register_spec(ModelSpec(
    name="roberta",
    title="RoBERTa",
    backbone="albert",
    tokenizer="bpe",
    finetune=roberta_defaults,
    adapter_module=f"{__name__}.adapter",
    presets=PRESETS,
))
