"""The toy backbone's own settings: one field, read by config.json under its plain name."""

from __future__ import annotations

from dataclasses import dataclass

from litebert.config import BackboneConfig, ConfigError, ModelConfig


@dataclass
class ToyBackboneConfig(BackboneConfig):
    """What only the toy backbone reads."""

    final_norm: bool = True  # a LayerNorm after the last layer (pre-norm layers leave none)

    def validate(self, config: ModelConfig) -> None:
        self.need(isinstance(self.final_norm, bool), "final_norm", "must be true or false")
        if config.embedding_size != config.hidden_size or config.sharing != "none" \
                or config.inner_group_num != 1:
            raise ConfigError("ModelConfig: the toy backbone has no factorised embeddings and "
                              "no shared layers: set embedding_size = hidden_size, sharing "
                              "'none' and inner_group_num 1")
