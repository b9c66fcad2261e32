"""A seventh backbone defined outside src: the package and its registration, nothing else.

Importing it registers the "toy" spec: its backbone (model.py, imported when a config names
the backbone), its settings (config.py), one preset saved in litebert's own layout, ALBERT's
fine-tuning defaults and the SentencePiece tokenizer kind.
"""

from litebert.models.albert.finetune import albert_defaults
from litebert.specs import ModelSpec, register_spec
from tests.models.toy.config import ToyBackboneConfig

PRESETS = {"toy-tiny": dict(
    backbone="toy", model_type="litebert", hidden_size=32, embedding_size=32,
    num_hidden_layers=2, num_hidden_groups=2, num_attention_heads=2, intermediate_size=64,
    max_position_embeddings=64, sharing="none", use_pooler=False,
    classifier_head="first_token", hidden_act="gelu")}

SPEC = register_spec(ModelSpec(
    name="toy",
    title="Toy",
    backbone="toy",
    tokenizer="sentencepiece",
    finetune=albert_defaults,
    presets=PRESETS,
    backbone_config=ToyBackboneConfig,
    backbone_module=f"{__name__}.model",
))
