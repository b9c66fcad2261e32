"""Model directories: config.json + model.safetensors in a checkpoint family's layout.

The family adapters (litebert.families) know the layouts; this module reads and writes files.
A model is saved in its config's family (transformers' ALBERT, BERT, ELECTRA or RoBERTa) when
that layout holds it, else in ALBERT's when that holds it (transformers reads the backbone)
or in our own ("litebert": attention-only or FFN-only sharing, RoBERTa's positions with
shared layers or a pair head, any backbone but "albert"), and says so. Loading takes the
layout from the directory's config.json, from safetensors (preferred) or `pytorch_model.bin`
read with `torch.load(weights_only=True)`; nothing is ever unpickled.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from litebert.config import ConfigError, ModelConfig, read_json_object
from litebert.families import BACKBONE_CLASS, FamilyAdapter, layout_for, read_config_dict
from litebert.families import family as family_of
from litebert.families.base import PREFIX
from litebert.files import atomic_write, atomic_write_json
from litebert.model.backbone import backbone_class, build_backbone
from litebert.model.unroll import unroll as unroll_model
from litebert.specs import OWN_LAYOUT

log = logging.getLogger("litebert")

WEIGHTS_NAME = "model.safetensors"
WEIGHTS_INDEX_NAME = "model.safetensors.index.json"
TORCH_WEIGHTS_NAME = "pytorch_model.bin"
# Trained heads that the directory's layout has no place for (a SOP head trained on an ELECTRA
# or RoBERTa model): kept beside the weights under our own keys, so no trained head is lost;
# litebert loads them, transformers ignores the file.
EXTRA_HEADS_NAME = "litebert_heads.safetensors"
_OWN_LAYOUT = family_of(OWN_LAYOUT)  # the heads kept beside the weights are in our layout
# Buffers some files carry (old transformers versions): no learned state.
_BUFFERS = re.compile(r"(position_ids|embeddings\.token_type_ids)$")


class CheckpointError(ValueError):
    """A model directory that cannot be loaded; the message names the file and the key."""


def external_key(key: str, config: ModelConfig) -> str:
    """Our canonical key -> its name in the layout `config` is saved in."""
    return layout_for(config)[0].external_key(key, config)


def canonical_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """State dict with the `backbone.` prefix (PREFIX) also for a bare backbone."""
    state = model.state_dict()
    if hasattr(model, "backbone"):
        return state
    return {f"{PREFIX}{k}": v for k, v in state.items()}


def _bare(model: torch.nn.Module) -> bool:
    return not hasattr(model, "backbone")


# ---- saving --------------------------------------------------------------------------------

def save_pretrained(model: torch.nn.Module, directory: str | Path, *,
                    unroll: bool = False) -> Path:
    """Write config.json + model.safetensors atomically; returns the directory.

    unroll: save a model with shared layers as its not-shared equivalent (every layer a copy
    of the one it used), so an all-shared ELECTRA or BERT model is written in its family's
    layout rather than ALBERT's; outputs are identical.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    config: ModelConfig = model.config  # type: ignore[assignment]
    if unroll and backbone_class(config).unrolled_config(config) != config:
        model = unroll_model(model)
        config = model.config  # type: ignore[assignment]
    # A bare backbone is BACKBONE_CLASS to the families, whatever its class (model/auto.py).
    name = BACKBONE_CLASS if _bare(model) else type(model).__name__
    family, why = layout_for(config, name)
    if why is not None:
        _say_layout(family, why, config, directory, name)
    tensors = {}
    for key, value in family.to_file(canonical_state(model), config).items():
        if _bare(model) and key.startswith(family.prefix):
            key = key[len(family.prefix):]  # transformers saves a bare backbone without it
        tensors[key] = value.detach().contiguous().cpu()
    atomic_write(directory / WEIGHTS_NAME, lambda p: save_file(tensors, str(p), {"format": "pt"}))
    saved = config.replace(architectures=[family.transformers_class(name)])
    atomic_write_json(directory / "config.json", family.config_to_dict(saved))
    return directory


def _say_layout(family: FamilyAdapter, why: str, config: ModelConfig, directory: Path,
                class_name: str) -> None:
    own = family_of(config.model_type)
    unrolled = backbone_class(config).unrolled_config(config)
    hint = f" (save_pretrained(..., unroll=True) writes it in {own.title} layout)" \
        if unrolled != config and own.cannot_hold(unrolled, class_name) is None else ""
    if family.model_type == "litebert":
        log.warning("%s: %s, so this %s model is saved in litebert's own layout (model_type "
                    "'litebert'); load it with litebert, not transformers%s.",
                    directory, why, config.model_type, hint)
        return
    log.warning("%s: %s, so this %s model is saved in ALBERT layout (model_type 'albert'): "
                "litebert reads it exactly, transformers' Albert classes read its backbone%s.",
                directory, why, config.model_type, hint)


def save_extra_heads(directory: str | Path, state: dict[str, torch.Tensor], reason: str) -> Path:
    """Write `state` (our keys) to EXTRA_HEADS_NAME in a model directory, the reason in its
    metadata: heads that the directory's transformers layout cannot hold."""
    path = Path(directory) / EXTRA_HEADS_NAME
    tensors = {_OWN_LAYOUT.prefix_to_file(k): v.detach().contiguous().cpu()
               for k, v in state.items()}
    atomic_write(path, lambda p: save_file(tensors, str(p), {"format": "pt", "reason": reason}))
    log.info("%s: %s; kept in litebert's layout beside the transformers weights", path, reason)
    return path


# ---- loading -------------------------------------------------------------------------------

def config_file(directory: Path) -> Path:
    """A model directory's config.json (or Google's albert_config.json)."""
    for name in ("config.json", "albert_config.json"):
        path = directory / name
        if path.is_file():
            return path
    raise CheckpointError(f"{directory}: no config.json (nor Google's albert_config.json)")


@dataclass(frozen=True)
class ModelFiles:
    """A model directory's config.json as read once (read_model_files): what a command passes
    on, so that loading the weights (load_pretrained) does not read it again."""

    directory: Path
    config: ModelConfig
    layout: FamilyAdapter  # the adapter of the layout its weights are in


def read_model_files(directory: str | Path) -> ModelFiles:
    """The config of a model directory and the adapter of its weights' layout."""
    path = config_file(Path(directory))
    config, layout = read_config_dict(read_json_object(path), str(path))
    return ModelFiles(Path(directory), config, layout)


def read_directory_config(directory: Path) -> tuple[ModelConfig, FamilyAdapter]:
    """The config of a model directory and the adapter of the layout its weights are in."""
    files = read_model_files(directory)
    return files.config, files.layout


def read_config(directory: Path) -> ModelConfig:
    return read_model_files(directory).config


def read_weights(directory: Path) -> tuple[dict[str, torch.Tensor], Path]:
    """All tensors of a directory, and the file they came from (for messages)."""
    single, index, legacy = (directory / n for n in
                             (WEIGHTS_NAME, WEIGHTS_INDEX_NAME, TORCH_WEIGHTS_NAME))
    if single.is_file():
        return _read_safetensors(single), single
    if index.is_file():
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        state: dict[str, torch.Tensor] = {}
        for shard in shards:
            state.update(_read_safetensors(directory / shard))
        return state, index
    if legacy.is_file():
        try:
            state = torch.load(legacy, map_location="cpu", weights_only=True)
        except Exception as err:  # weights_only refuses anything but plain tensors
            raise CheckpointError(f"{legacy}: not a plain tensor checkpoint ({err})") from None
        return state, legacy
    if any(directory.glob("*.index")) or any(directory.glob("*.ckpt*")):
        raise CheckpointError(f"{directory}: TensorFlow checkpoints are not read; convert to "
                              f"safetensors with transformers first")
    raise CheckpointError(f"{directory}: no weights ({WEIGHTS_NAME}, {WEIGHTS_INDEX_NAME} or "
                          f"{TORCH_WEIGHTS_NAME})")


def _read_safetensors(path: Path) -> dict[str, torch.Tensor]:
    try:
        with safe_open(str(path), framework="pt") as f:
            return {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (not a dict)
    except Exception as err:
        raise CheckpointError(f"{path}: unreadable safetensors file ({err})") from None


def _with_prefix(state: dict[str, torch.Tensor], family: FamilyAdapter,
                 roots: tuple[str, ...]) -> dict[str, Any]:
    """A bare backbone file (no `albert.` / `bert.` / ... prefix) gets the prefix back on the
    keys under the family's backbone roots or the model's backbone's own (`roots`: the first
    parts of its keys)."""
    if any(k.startswith(family.prefix) for k in state):
        return state
    roots = family.backbone_roots + roots
    return {(family.prefix + k if k.split(".")[0] in roots else k): v for k, v in state.items()}


def load_pretrained(cls, directory: str | Path, *, strict: bool = False,
                    files: ModelFiles | None = None, **overrides: Any):
    """`cls` with the weights of `directory`; `files`: its config.json as the command read it
    already (read here when None)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise CheckpointError(f"{directory}: not a directory")
    if files is None or files.directory != directory:
        files = read_model_files(directory)
    config, family = files.config, files.layout
    if overrides:
        try:
            config = config.replace(**overrides)
        except (TypeError, ConfigError) as err:
            raise ConfigError(f"{directory}: config with overrides {overrides}: {err}") from None
    try:
        backbone_class(config)  # an unknown backbone: before any weight is read
    except ConfigError as err:
        raise ConfigError(f"{config_file(directory)}: {err}") from None
    state, source = read_weights(directory)
    model = cls(config)
    ours = canonical_state(model)
    roots = tuple(sorted({key.split(".")[0] for key in model.base_model.state_dict()}))
    loaded = _match(family.from_file(_with_prefix(state, family, roots), config), ours,
                    family, config, source)
    loaded.update(_extra_heads(directory, ours))
    _check_missing(set(ours) - set(loaded), source, strict)
    if _bare(model):
        loaded = {k[len(PREFIX):]: v for k, v in loaded.items()}
    model.load_state_dict(loaded, strict=False)
    return model


def read_canonical(directory: str | Path) -> tuple[ModelConfig, dict[str, torch.Tensor],
                                                   list[str], Path]:
    """Every tensor of a model directory under our canonical keys (the backbone under
    `backbone.`, heads as our classes name them, heads kept beside the weights included),
    whatever class wrote it; with its config, the file's keys that stand for no parameter of
    ours (buffers, heads of classes litebert lacks) and the file read. What a run that starts
    from the directory loads (litebert.train.start_from); nothing is built but on the meta
    device."""
    directory = Path(directory)
    config, family = read_directory_config(directory)
    try:
        with torch.device("meta"):  # only the backbone's key roots are wanted
            backbone = cast(torch.nn.Module, build_backbone(config))
            roots = tuple(sorted({k.split(".")[0] for k in backbone.state_dict()}))
    except ConfigError as err:
        raise ConfigError(f"{config_file(directory)}: {err}") from None
    state, source = read_weights(directory)
    prefixed = _with_prefix(state, family, roots)
    kept = family.from_file(prefixed, config)
    unused = sorted(set(prefixed) - set(kept))
    canonical: dict[str, torch.Tensor] = {}
    for key, value in kept.items():
        if key in family.tied_copies:  # the word embeddings again: used through the tie
            continue
        mine = None if _BUFFERS.search(key) else family.internal_key(key, config)
        if mine is None:
            unused.append(key)
        else:
            canonical[mine] = value
    canonical.update(extra_heads(directory))
    return config, canonical, sorted(unused), source


def _match(state: dict[str, torch.Tensor], ours: dict[str, torch.Tensor],
           family: FamilyAdapter, config: ModelConfig, source: Path) -> dict[str, torch.Tensor]:
    """The file's tensors under our keys; heads the model lacks are skipped, anything else
    that has no place in the model is an error naming the key."""
    loaded: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        if _BUFFERS.search(key) or key in family.tied_copies:
            continue
        mine = family.internal_key(key, config)
        if mine is not None and mine in ours:
            target = ours[mine]
            if tuple(value.shape) != tuple(target.shape):
                raise CheckpointError(f"{source}: {key} has shape {tuple(value.shape)}, the model "
                                      f"({config.model_type}) expects {tuple(target.shape)}")
            loaded[mine] = value
        elif not family.ignorable(key):
            raise CheckpointError(f"{source}: unexpected key {key} (shape "
                                  f"{tuple(value.shape)}): the file does not match config.json")
    return loaded


def extra_heads(directory: str | Path, prefix: str = "") -> dict[str, torch.Tensor]:
    """The heads kept beside a directory's weights (EXTRA_HEADS_NAME) whose keys start with
    `prefix`; {} when there are none."""
    path = Path(directory) / EXTRA_HEADS_NAME
    if not path.is_file():
        return {}
    kept = {_OWN_LAYOUT.prefix_from_file(k): v for k, v in _read_safetensors(path).items()}
    return {k: v for k, v in kept.items() if k.startswith(prefix)}


def extra_head_keys(directory: str | Path) -> set[str]:
    """The canonical keys of the heads kept beside a directory's weights, no tensor read."""
    path = Path(directory) / EXTRA_HEADS_NAME
    if not path.is_file():
        return set()
    with safe_open(str(path), framework="pt") as f:
        return {_OWN_LAYOUT.prefix_from_file(k) for k in f.keys()}  # noqa: SIM118


def _extra_heads(directory: Path, ours: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The heads kept beside the weights (EXTRA_HEADS_NAME) that this model has."""
    path = directory / EXTRA_HEADS_NAME
    kept = extra_heads(directory)
    for key, value in kept.items():
        if key in ours and tuple(value.shape) != tuple(ours[key].shape):
            raise CheckpointError(f"{path}: {key} has shape {tuple(value.shape)}, the model "
                                  f"expects {tuple(ours[key].shape)}")
    return {k: v for k, v in kept.items() if k in ours}


def _check_missing(missing: set[str], source: Path, strict: bool) -> None:
    backbone = {k for k in missing if k.startswith(PREFIX) and
                not k.startswith(f"{PREFIX}pooler.")}
    if backbone or (missing and strict):
        keys = sorted(backbone or missing)
        raise CheckpointError(f"{source}: missing {len(keys)} key(s), e.g. {', '.join(keys[:5])}")
    if missing:
        log.warning("%s: newly initialised (not in the checkpoint): %s", source,
                    ", ".join(sorted(missing)))
