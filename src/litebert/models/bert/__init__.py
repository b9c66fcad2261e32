"""BERT (Devlin et al. 2019) on the albert backbone: presets, transformers' BERT layout and
fine-tuning defaults. The paper's baselines share ALBERT's SentencePiece vocabulary."""

from litebert.models.bert.finetune import bert_defaults
from litebert.models.bert.presets import PRESETS
from litebert.specs import ModelSpec, register_spec

SPEC = register_spec(ModelSpec(
    name="bert",
    title="BERT",
    backbone="albert",
    tokenizer="sentencepiece",
    finetune=bert_defaults,
    adapter_module=f"{__name__}.adapter",
    presets=PRESETS,
))
