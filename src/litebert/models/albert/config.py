"""The ALBERT backbone's own settings (config.backbone_config of a model on the "albert"
backbone, which BERT, ELECTRA and RoBERTa build on too). No torch: ModelConfig reads it."""

from __future__ import annotations

from dataclasses import dataclass

from litebert.config import BackboneConfig, ConfigError, ModelConfig

POSITION_NUMBERINGS = ("from_zero", "after_pad")


@dataclass
class AlbertBackboneConfig(BackboneConfig):
    """What only this backbone reads (config.json's flat name)."""

    # Position ids when the caller passes none. "from_zero": token t has position t, padding
    # or not (ALBERT, BERT, ELECTRA). "after_pad": RoBERTa's (fairseq's) numbering: real
    # tokens (id != pad_token_id) are numbered pad_token_id + 1, + 2, ... by their count so
    # far, pad tokens get pad_token_id, whose row of the position table is a padding row (zero
    # at init, never trained). The first pad_token_id + 1 rows are thus no position: roberta's
    # max_position_embeddings 514 with pad 1 holds 512 tokens (max_sequence_length).
    position_numbering: str = "from_zero"

    def validate(self, config: ModelConfig) -> None:
        self.need(self.position_numbering in POSITION_NUMBERINGS, "position_numbering",
                  f"unknown; choose from {POSITION_NUMBERINGS}")
        if self.position_numbering == "after_pad" \
                and config.pad_token_id + 1 >= config.max_position_embeddings:
            raise ConfigError(
                f"ModelConfig.max_position_embeddings={config.max_position_embeddings!r}: "
                f"position_numbering='after_pad' numbers the first token pad_token_id + 1 = "
                f"{config.pad_token_id + 1}: max_position_embeddings must exceed it (RoBERTa: "
                f"512 positions + 2 = 514)")

    def max_sequence_length(self, config: ModelConfig) -> int:
        if self.position_numbering == "after_pad":
            return config.max_position_embeddings - config.pad_token_id - 1
        return config.max_position_embeddings
