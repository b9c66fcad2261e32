"""XLNet (Yang et al. 2019): the "xlnet" backbone (model.py), its settings, presets,
transformers' XLNet layout, fine-tuning defaults and XLNet's SentencePiece layout."""

from litebert.models.xlnet.config import XLNetBackboneConfig
from litebert.models.xlnet.finetune import xlnet_defaults
from litebert.models.xlnet.presets import PRESETS
from litebert.specs import ModelSpec, register_spec

SPEC = register_spec(ModelSpec(
    name="xlnet",
    title="XLNet",
    backbone="xlnet",
    tokenizer="xlnet",
    finetune=xlnet_defaults,
    adapter_module=f"{__name__}.adapter",
    presets=PRESETS,
    backbone_config=XLNetBackboneConfig,
    backbone_module=f"{__name__}.model",
))
