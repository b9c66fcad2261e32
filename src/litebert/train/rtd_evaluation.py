"""Replaced-token detection in `litebert eval-pretraining`: an ELECTRA discriminator directory.

A discriminator has no MLM head, so MLM, SOP and NSP are not scored; what it learned is
replaced-token detection (RTD), and scoring that needs the generator that corrupts its input:
`--generator DIR`, by default the sibling `../generator` that training's export writes
(RUN_DIR/export/{discriminator,generator}).

The pair is put back together as training had it (`ElectraPretraining`): the discriminator's
weights, the generator's encoder and MLM head, and ONE set of embeddings, the
discriminator's (in training both read the same module; the export copies them into the
generator). It is then scored by training's own evaluation, `ElectraObjective.evaluate`, on
the data's held-out instances with the run settings' defaults (uniform masking, mask_prob,
temperature) and --seed, --instances, --batch-size as a run's seed, eval_instances and
micro_batch_size. So with a run's values, fp32 and its data, the figures are that run's last
`eval_rtd_*` / `eval_generator_mlm_*` (tests/train/test_rtd_evaluation.py checks it).

`evaluate_model_directory` is what the command calls: this for a discriminator, else
litebert.train.evaluation's MLM/SOP/NSP suite. The dispatch lives here because that module
cannot import this one: the ELECTRA objective imports it, and this imports the objective.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any

import torch

from litebert.config import AlbertConfig
from litebert.data.integrity import DataError
from litebert.data.loader import PretrainingDataset
from litebert.model import AlbertForMaskedLM, CheckpointError
from litebert.model.hub import external_key, read_config
from litebert.model.rtd import AlbertForReplacedTokenDetection
from litebert.objectives.electra import ElectraObjective, ElectraPretraining, ElectraSettings
from litebert.train.distributed import DistInfo
from litebert.train.evaluation import (
    RESULT_KEYS,
    check_compatible,
    checkpoint_keys,
    evaluate_pretraining,
    is_discriminator,
    open_heldout,
    warn_other_tokenizer,
)

log = logging.getLogger("litebert")

# Keys added to evaluate_pretraining's result for a discriminator, in order (the values are
# ElectraObjective.evaluate's eval_* metrics without the prefix).
RTD_KEYS = ("rtd_accuracy", "rtd_baseline_accuracy", "rtd_precision", "rtd_recall", "rtd_loss",
            "replaced_fraction", "generator_mlm_accuracy", "generator_mlm_baseline_accuracy",
            "generator_mlm_loss", "rtd_instances", "generator")
_MLM_HEAD = "predictions.dense.weight"  # our key; hub.external_key maps it to a layout


def find_generator(discriminator: Path, generator: str | Path | None) -> Path:
    """The generator directory: the one given, else the export's sibling ../generator."""
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


def _mlm_model(directory: Path) -> Path:
    """`directory`, when its weights have an MLM head (a discriminator given by mistake
    would otherwise fail later, on a list of missing keys)."""
    keys, source = checkpoint_keys(directory)
    head = external_key(_MLM_HEAD, read_config(directory))
    if head not in keys:
        raise CheckpointError(f"generator {directory}: no MLM head ({head} not in {source}); "
                              f"give the ELECTRA generator, e.g. RUN_DIR/export/generator")
    return directory


class _Reloaded(ElectraObjective):
    """Training's objective, with the generator's shape taken from its directory rather than
    derived from the run's generator_size / generator_layers (not recorded in an export)."""

    def __init__(self, run: ElectraSettings, data: PretrainingDataset, generator: AlbertConfig):
        super().__init__(run, data)
        self._generator = generator

    def generator_config(self, config: AlbertConfig) -> AlbertConfig:
        return self._generator


def _check_pair(discriminator: AlbertConfig, generator: AlbertConfig, where: Path) -> None:
    """The generator reads the discriminator's embeddings: same vocabulary and width E."""
    for field in ("vocab_size", "embedding_size"):
        mine, theirs = getattr(generator, field), getattr(discriminator, field)
        if mine != theirs:
            raise CheckpointError(f"{where / 'config.json'}: {field} {mine}, the "
                                  f"discriminator's is {theirs}: not this discriminator's "
                                  f"generator (it reads the discriminator's embeddings)")


def _warn_untied(discriminator: AlbertForReplacedTokenDetection, generator: AlbertForMaskedLM,
                 where: Path) -> None:
    """An exported generator carries a copy of the discriminator's embeddings; other ones
    mean another run's generator, which is scored with the discriminator's all the same."""
    ours = discriminator.albert.embeddings.state_dict()
    theirs = generator.albert.embeddings.state_dict()
    if any(v.shape != ours[k].shape or not torch.equal(v, ours[k]) for k, v in theirs.items()):
        log.warning("%s: its embeddings differ from the discriminator's, so it may not be "
                    "this discriminator's generator; it reads the discriminator's, as in "
                    "training", where)


def load_pair(discriminator_dir: Path, generator_dir: Path,
              objective: ElectraObjective) -> ElectraPretraining:
    """Training's module (`objective.build`) with the two directories' weights in it."""
    discriminator = AlbertForReplacedTokenDetection.from_pretrained(discriminator_dir,
                                                                    strict=True)
    generator = AlbertForMaskedLM.from_pretrained(generator_dir, strict=True)
    _check_pair(discriminator.config, generator.config, generator_dir)
    _warn_untied(discriminator, generator, generator_dir)
    model = objective.build(discriminator.config)
    assert isinstance(model, ElectraPretraining)
    model.discriminator.load_state_dict(discriminator.state_dict())
    model.generator.encoder.load_state_dict(generator.albert.encoder.state_dict())
    model.generator.predictions.load_state_dict(generator.predictions.state_dict())
    return model


def _settings(data_dir: Path, instances: int, seed: int, batch_size: int) -> ElectraSettings:
    """A run config with training's defaults for everything eval-pretraining does not set."""
    from litebert.train.run_config import PretrainConfig

    return PretrainConfig(objective="electra", data=str(data_dir), seed=seed,
                          eval_instances=instances, batch_size=batch_size,
                          micro_batch_size=batch_size)


def evaluate_discriminator(model_dir: Path, data_dir: str | Path, *,
                           generator: str | Path | None = None, instances: int = 2000,
                           seed: int = 0, batch_size: int = 32) -> dict[str, Any]:
    """RESULT_KEYS (None: not scored, no MLM head) then RTD_KEYS of an ELECTRA discriminator
    directory on the held-out instances of `data_dir` (see the module docstring)."""
    if instances < 1 or batch_size < 1:
        raise ValueError(f"instances={instances}, batch_size={batch_size}: must be positive")
    generator_dir = find_generator(model_dir, generator)
    held = open_heldout(data_dir)  # DataError naming the directory when it is none
    check_compatible(read_config(model_dir), held, str(model_dir / "config.json"))
    warn_other_tokenizer(model_dir, held)
    data = PretrainingDataset(held.directory, "heldout", seed=seed)
    if not len(data):
        raise DataError(f"{held.directory / 'manifest.json'}: no held-out instances "
                        f"(heldout_fraction={held.config.heldout_fraction}); rebuild with "
                        f"--heldout-fraction above 0")
    settings = _settings(held.directory, instances, seed, batch_size)
    objective = _Reloaded(settings, data, read_config(generator_dir))
    model = load_pair(model_dir, generator_dir, objective)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    metrics = objective.evaluate(model.to(device), DistInfo(0, 1, 0, device),
                                 contextlib.nullcontext())
    scored = {k: metrics[f"eval_{k}"] for k in RTD_KEYS if f"eval_{k}" in metrics}
    result: dict[str, Any] = {**dict.fromkeys(RESULT_KEYS), "has_pair_head": False, **scored,
                              "rtd_instances": min(len(data), instances),
                              "generator": str(generator_dir)}
    return result


def evaluate_model_directory(model_dir: str | Path, data_dir: str | Path, *,
                             generator: str | Path | None = None, instances: int = 2000,
                             seed: int = 0, batch_size: int = 32) -> dict[str, Any]:
    """`litebert eval-pretraining`: evaluate_discriminator for an ELECTRA discriminator,
    evaluate_pretraining (MLM, SOP, NSP) for any other model directory. Here and not in
    litebert.train.evaluation, which the ELECTRA objective imports."""
    model_dir = Path(model_dir)
    if is_discriminator(model_dir):
        return evaluate_discriminator(model_dir, data_dir, generator=generator,
                                      instances=instances, seed=seed, batch_size=batch_size)
    if generator is not None:  # unused, it would suggest that RTD was scored
        raise CheckpointError(f"--generator {generator}: only an ELECTRA discriminator is "
                              f"scored with a generator; {model_dir} has no replaced-token "
                              f"detection head")
    return evaluate_pretraining(model_dir, data_dir, instances=instances, seed=seed,
                                batch_size=batch_size)
