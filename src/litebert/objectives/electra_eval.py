"""ELECTRA's evaluation of an exported discriminator directory (`litebert eval-pretraining`,
studies).

A discriminator has no MLM head, so MLM, SOP and NSP are not scored; what it learned is
replaced-token detection (RTD), and scoring that needs the generator that corrupts its input:
`generator=DIR`, by default the sibling `../generator` that training's export writes
(RUN_DIR/export/{discriminator,generator}).

The pair is put back together as training had it: the objective's own module (`build`), the
discriminator's weights, the generator's encoder and MLM head, and ONE set of embeddings, the
discriminator's (in training both read the same module; the export copies them into the
generator). It is then scored by the objective's own run evaluation on the data's held-out
instances with the default ELECTRA fields and `seed`, `instances`, `batch_size` as a run's
seed, eval_instances and micro_batch_size. So with a run's values, fp32 and its data, the
figures are that run's last `eval_rtd_*` / `eval_generator_mlm_*`
(tests/objectives/test_electra_eval.py checks it).

This module takes the objective class as an argument: it does not import the ELECTRA module,
which imports it, and it works for a copy of that class under another module name.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from litebert.config import ModelConfig, read_json_object
from litebert.data.loader import PretrainingDataset
from litebert.model import CheckpointError, EncoderForMaskedLM
from litebert.model.backbone import EmbeddingSharingBackbone, embedding_sharing_class
from litebert.model.hub import ModelFiles, external_key, extra_heads, read_model_files
from litebert.model.rtd import EncoderForReplacedTokenDetection
from litebert.objectives.evaluation import (
    Rows,
    evaluate_alone,
    has_weights,
    heldout_for,
    no_heldout,
)
from litebert.objectives.mlm_eval import MLM_HEAD, RESULT_KEYS

log = logging.getLogger("litebert")

# Keys added to evaluate_pretraining's result for a discriminator, in order (the values are
# ElectraObjective.evaluate's eval_* metrics without the prefix).
RTD_KEYS = ("rtd_accuracy", "rtd_baseline_accuracy", "rtd_precision", "rtd_recall", "rtd_loss",
            "replaced_fraction", "generator_mlm_accuracy", "generator_mlm_baseline_accuracy",
            "generator_mlm_loss", "rtd_instances", "generator")
# The run's objective fields, beside an exported discriminator (mask_prob, temperature, ...):
# eval-pretraining corrupts with them, so it reproduces the run's own last evaluation.
OBJECTIVE_FIELDS_NAME = "litebert_objective.json"
RTD_HEAD = ("discriminator_predictions.dense.weight",)  # our key of the discriminator's head
RTD_ROWS: Rows = (("rtd_accuracy", "rtd_baseline_accuracy"), ("rtd_precision", None),
                  ("rtd_recall", None), ("rtd_loss", None), ("replaced_fraction", None),
                  ("generator_mlm_accuracy", "generator_mlm_baseline_accuracy"),
                  ("generator_mlm_loss", None))


def sharing_backbone(config: ModelConfig) -> type[EmbeddingSharingBackbone]:
    """The backbone class of `config`, which must declare embed_encode (ConfigError else)."""
    return embedding_sharing_class(config, "objective electra runs its generator's encoder "
                                           "on the discriminator's embeddings")


def find_generator(discriminator: Path, generator: str | Path | None) -> ModelFiles:
    """The generator directory (its config.json as read): the one given, else the export's
    sibling ../generator."""
    if generator is not None:
        if not Path(generator).is_dir():
            raise CheckpointError(f"--generator {generator}: no such model directory")
        return _mlm_model(Path(generator))
    sibling = discriminator.resolve().parent / "generator"
    if sibling.is_dir():
        return _mlm_model(sibling)
    raise CheckpointError(
        f"{discriminator} is an ELECTRA discriminator (replaced-token detection head, no MLM "
        f"head): scoring it needs the generator that corrupts its input, and there is none at "
        f"{sibling}; pass one with --generator DIR (training exports it as "
        f"RUN_DIR/export/generator)")


def _mlm_model(directory: Path) -> ModelFiles:
    """`directory`'s config.json as read, when its weights have an MLM head (a discriminator
    given by mistake would otherwise fail later, on a list of missing keys)."""
    files = read_model_files(directory)
    if not has_weights(files, *MLM_HEAD):
        head = external_key(MLM_HEAD[0], files.config)
        raise CheckpointError(f"generator {directory}: no MLM head ({head}); give the ELECTRA "
                              f"generator, e.g. RUN_DIR/export/generator")
    return files


def _check_pair(discriminator: ModelConfig, generator: ModelConfig, where: Path) -> None:
    """The generator reads the discriminator's embeddings: same vocabulary and width E."""
    for field in ("vocab_size", "embedding_size"):
        mine, theirs = getattr(generator, field), getattr(discriminator, field)
        if mine != theirs:
            raise CheckpointError(f"{where / 'config.json'}: {field} {mine}, the "
                                  f"discriminator's is {theirs}: not this discriminator's "
                                  f"generator (it reads the discriminator's embeddings)")


def _warn_untied(discriminator: EncoderForReplacedTokenDetection, generator: EncoderForMaskedLM,
                 where: Path) -> None:
    """An exported generator carries a copy of the discriminator's embeddings; other ones
    mean another run's generator, which is scored with the discriminator's all the same."""
    name = sharing_backbone(discriminator.config).embeddings_name
    ours = discriminator.backbone.get_submodule(name).state_dict()
    theirs = generator.backbone.get_submodule(name).state_dict()
    if any(v.shape != ours[k].shape or not torch.equal(v, ours[k]) for k, v in theirs.items()):
        log.warning("%s: its embeddings differ from the discriminator's, so it may not be "
                    "this discriminator's generator; it reads the discriminator's, as in "
                    "training", where)


def load_pair(discriminator_files: ModelFiles, generator_files: ModelFiles,
              objective: Any) -> nn.Module:
    """The objective's training module (`build`) with the two directories' weights in it."""
    discriminator_dir, generator_dir = discriminator_files.directory, generator_files.directory
    discriminator = EncoderForReplacedTokenDetection.from_pretrained(
        discriminator_dir, strict=True, files=discriminator_files)
    generator = EncoderForMaskedLM.from_pretrained(generator_dir, strict=True,
                                                   files=generator_files)
    _check_pair(discriminator.config, generator.config, generator_dir)
    _warn_untied(discriminator, generator, generator_dir)
    model = objective.build(discriminator.config)
    model.discriminator.load_state_dict(discriminator.state_dict())
    encoder = sharing_backbone(generator.config).encoder_name
    model.generator.encoder.load_state_dict(generator.backbone.get_submodule(encoder).state_dict())
    model.generator.predictions.load_state_dict(generator.predictions.state_dict())
    kept = extra_heads(discriminator_dir, "pair_head.")
    if kept and getattr(model, "pair_head", None) is not None:
        model.load_state_dict(kept, strict=False)
    return model


@dataclass
class _Settings:
    """A run's settings as eval-pretraining gives them (RunSettings), ELECTRA's fields at
    their defaults."""

    seed: int
    micro_batch_size: int
    eval_instances: int
    objective: Any
    model_overrides: dict[str, Any]


def _run_fields(objective_class: Any, model_dir: Path) -> Any:
    """The Config the run trained with, as its export recorded it (defaults where it did
    not: an export of an older release, or a directory from elsewhere)."""
    path = model_dir / OBJECTIVE_FIELDS_NAME
    recorded = read_json_object(path) if path.is_file() else {}
    known = {f.name for f in dataclasses.fields(objective_class.Config)} - {"name"}
    return objective_class.Config(**{k: v for k, v in recorded.items() if k in known})


def evaluate_discriminator(objective_class: Any, model: ModelFiles, data_dir: str | Path, *,
                           generator: str | Path | None = None, instances: int = 2000,
                           seed: int = 0, batch_size: int = 32) -> dict[str, Any]:
    """RESULT_KEYS (None: not scored, no MLM head) then RTD_KEYS of an ELECTRA discriminator
    directory on the held-out instances of `data_dir` (see the module docstring)."""
    if instances < 1 or batch_size < 1:
        raise ValueError(f"instances={instances}, batch_size={batch_size}: must be positive")
    model_dir = model.directory
    generator_files = find_generator(model_dir, generator)
    held = heldout_for(model, data_dir)
    data = PretrainingDataset(held.data, "heldout", seed=seed)  # the manifest as read
    if not len(data):
        raise no_heldout(held, "instances")
    settings = _Settings(seed, batch_size, instances, _run_fields(objective_class, model_dir), {})
    objective = objective_class(settings, data)
    objective.generator_shape = generator_files.config  # not recorded in an export
    metrics = evaluate_alone(objective, load_pair(model, generator_files, objective))
    scored = {k: metrics[f"eval_{k}"] for k in RTD_KEYS if f"eval_{k}" in metrics}
    return {**dict.fromkeys(RESULT_KEYS), "has_pair_head": False, **scored,
            "rtd_instances": min(len(data), instances),
            "generator": str(generator_files.directory)}
