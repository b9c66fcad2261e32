"""Model directories: config.json + model.safetensors in transformers' layout.

Our parameter names (see model/albert.py) are mapped to one of three layouts:
- "albert": transformers' ALBERT (`albert.encoder.albert_layer_groups.{g}.albert_layers.{j}`),
- "bert": transformers' BERT (`bert.encoder.layer.{i}.attention.self.query`, `cls.*`),
- "litebert": our own names, for attention-only or FFN-only sharing, which transformers
  cannot represent.
Loading accepts any of them, from safetensors (preferred) or `pytorch_model.bin` read with
`torch.load(weights_only=True)`; nothing is ever unpickled.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from litebert.config import AlbertConfig, ConfigError
from litebert.files import atomic_write, atomic_write_json

log = logging.getLogger("litebert")

WEIGHTS_NAME = "model.safetensors"
WEIGHTS_INDEX_NAME = "model.safetensors.index.json"
TORCH_WEIGHTS_NAME = "pytorch_model.bin"
# Keys some files carry that hold no learned state (buffers, copies of tied weights).
_SKIPPED = re.compile(
    r"(position_ids|embeddings\.token_type_ids|predictions\.decoder\.(weight|bias))$")
# Heads other classes use: present in a file but unused by this class is fine.
_HEAD_PREFIXES = ("predictions.", "sop_classifier.", "classifier.", "qa_outputs.",
                  "albert.pooler.", "cls.", "bert.pooler.")


class CheckpointError(ValueError):
    """A model directory that cannot be loaded; the message names the file and the key."""


def layout_of(config: AlbertConfig) -> str:
    if config.model_type == "bert":
        return "bert"
    return "albert" if config.hf_compatible else "litebert"


# ---- key mapping ---------------------------------------------------------------------------

_BERT_ATTENTION = {"query": "attention.self.query", "key": "attention.self.key",
                   "value": "attention.self.value", "dense": "attention.output.dense",
                   "LayerNorm": "attention.output.LayerNorm"}
_BERT_FFN = {"ffn": "intermediate.dense", "ffn_output": "output.dense",
             "full_layer_layer_norm": "output.LayerNorm"}
_BERT_HEADS = {"predictions.dense.": "cls.predictions.transform.dense.",
               "predictions.LayerNorm.": "cls.predictions.transform.LayerNorm.",
               "predictions.bias": "cls.predictions.bias",
               "sop_classifier.classifier.": "cls.seq_relationship.",
               "albert.pooler.": "bert.pooler.dense."}
_LAYER = re.compile(r"albert\.encoder\.(attentions|ffns)\.(\d+)\.(\w+)\.(\w+)$")


def external_key(key: str, config: AlbertConfig) -> str:
    """Our canonical key (with the `albert.` prefix) -> the key in the file's layout."""
    layout = layout_of(config)
    if layout == "litebert":
        return key
    match = _LAYER.match(key)
    if layout == "albert":
        if not match:
            return key
        part, n, module, tensor = match.groups()
        g, j = divmod(int(n), config.inner_group_num)
        base = f"albert.encoder.albert_layer_groups.{g}.albert_layers.{j}."
        return base + ("attention." if part == "attentions" else "") + f"{module}.{tensor}"
    if match:
        part, n, module, tensor = match.groups()
        table = _BERT_ATTENTION if part == "attentions" else _BERT_FFN
        return f"bert.encoder.layer.{n}.{table[module]}.{tensor}"
    for ours, theirs in _BERT_HEADS.items():
        if key.startswith(ours):
            return theirs + key[len(ours):]
    return "bert." + key[len("albert."):] if key.startswith("albert.") else key


def _canonical_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """State dict with the `albert.` prefix also for a bare backbone."""
    state = model.state_dict()
    if hasattr(model, "albert"):
        return state
    return {f"albert.{k}": v for k, v in state.items()}


def _bare(model: torch.nn.Module) -> bool:
    return not hasattr(model, "albert")


# ---- saving --------------------------------------------------------------------------------

_BERT_NAMES = {"AlbertModel": "BertModel", "AlbertForPreTraining": "BertForPreTraining",
               "AlbertForMaskedLM": "BertForMaskedLM"}


def save_pretrained(model: torch.nn.Module, directory: str | Path) -> Path:
    """Write config.json + model.safetensors atomically; returns the directory."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    config: AlbertConfig = model.config  # type: ignore[assignment]
    name = type(model).__name__
    if config.model_type == "bert":
        name = _BERT_NAMES.get(name, name.replace("Albert", "Bert"))
    if not config.hf_compatible:
        log.warning("sharing=%r has no transformers equivalent: %s is saved in litebert's "
                    "own layout (model_type 'litebert'); load it with litebert, not "
                    "transformers.", config.sharing, directory)
    prefix = "bert." if config.model_type == "bert" else "albert."
    tensors = {}
    for key, value in _canonical_state(model).items():
        out = external_key(key, config)
        if _bare(model) and out.startswith(prefix):
            out = out[len(prefix):]  # transformers saves a bare backbone without the prefix
        tensors[out] = value.detach().contiguous().cpu()
    atomic_write(directory / WEIGHTS_NAME, lambda p: save_file(tensors, str(p), {"format": "pt"}))
    saved = config.replace(architectures=[name])
    atomic_write_json(directory / "config.json", saved.to_dict())
    return directory


# ---- loading -------------------------------------------------------------------------------

def read_config(directory: Path) -> AlbertConfig:
    for name in ("config.json", "albert_config.json"):
        if (directory / name).is_file():
            return AlbertConfig.from_json_file(directory / name)
    raise CheckpointError(f"{directory}: no config.json (nor Google's albert_config.json)")


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


def _with_prefix(state: dict[str, torch.Tensor], config: AlbertConfig) -> dict[str, Any]:
    """A bare backbone file (no `albert.` / `bert.` prefix) gets the prefix back."""
    prefix = "bert." if config.model_type == "bert" else "albert."
    if any(k.startswith(prefix) for k in state):
        return state
    return {(prefix + k if k.split(".")[0] in ("embeddings", "encoder", "pooler") else k): v
            for k, v in state.items()}


def load_pretrained(cls, directory: str | Path, *, strict: bool = False, **overrides: Any):
    directory = Path(directory)
    if not directory.is_dir():
        raise CheckpointError(f"{directory}: not a directory")
    config = read_config(directory)
    if overrides:
        try:
            config = config.replace(**overrides)
        except (TypeError, ConfigError) as err:
            raise ConfigError(f"{directory}: config with overrides {overrides}: {err}") from None
    state, source = read_weights(directory)
    model = cls(config)
    ours = _canonical_state(model)
    wanted = {external_key(k, config): k for k in ours}
    loaded: dict[str, torch.Tensor] = {}
    for key, value in _with_prefix(state, config).items():
        if key in wanted:
            target = ours[wanted[key]]
            if tuple(value.shape) != tuple(target.shape):
                raise CheckpointError(f"{source}: {key} has shape {tuple(value.shape)}, the model "
                                      f"({config.model_type}) expects {tuple(target.shape)}")
            loaded[wanted[key]] = value
        elif not _SKIPPED.search(key) and not key.startswith(_HEAD_PREFIXES):
            raise CheckpointError(f"{source}: unexpected key {key} (shape "
                                  f"{tuple(value.shape)}): the file does not match config.json")
    _check_missing(set(ours) - set(loaded), source, strict)
    if _bare(model):
        loaded = {k[len("albert."):]: v for k, v in loaded.items()}
    model.load_state_dict(loaded, strict=False)
    return model


def _check_missing(missing: set[str], source: Path, strict: bool) -> None:
    backbone = {k for k in missing if k.startswith("albert.") and
                not k.startswith("albert.pooler.")}
    if backbone or (missing and strict):
        keys = sorted(backbone or missing)
        raise CheckpointError(f"{source}: missing {len(keys)} key(s), e.g. {', '.join(keys[:5])}")
    if missing:
        log.warning("%s: newly initialised (not in the checkpoint): %s", source,
                    ", ".join(sorted(missing)))
