"""Starting a pre-training run from an existing model directory (`litebert pretrain --from DIR`).

Continued pre-training (domain-adaptive, Gururangan et al. 2020, arXiv 2004.10964) takes a
trained model and goes on with its masked-LM (or RTD, or PLM) training on new text. What
changes against a run from a preset:
- the model's shape is DIR's config.json (model_overrides may change dropout and the like,
  never a parameter's shape: that is a sentence before the first step);
- the weights are DIR's, mapped to the objective's module by the objective
  (`start_state`); whatever the module has that DIR lacks (a pair head on a masked-LM
  directory, an MLM head on a bare encoder, a generator) is initialised and named in one
  log line, and every tensor of DIR that the run does not use is named in another;
- the data must have been built with DIR's vocabulary (checked before the first step);
- the export takes DIR's class and layout back (a BertForMaskedLM directory in, a
  BertForMaskedLM directory out) with DIR's tokenizer and its other files (a
  sentence-transformers module list, say), so code that read DIR reads the export.

DIR may be a model directory of any family litebert reads, a run directory (its export), or
an ELECTRA export holding discriminator/ and generator/ (both are used).
"""

from __future__ import annotations

import logging
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from litebert.config import ModelConfig
from litebert.families import BACKBONE_CLASS, family
from litebert.model.auto import model_class, named_class
from litebert.model.hub import (
    EXTRA_HEADS_NAME,
    TORCH_WEIGHTS_NAME,
    WEIGHTS_INDEX_NAME,
    WEIGHTS_NAME,
    CheckpointError,
    canonical_state,
    extra_heads,
    read_canonical,
    read_config,
    save_extra_heads,
)
from litebert.tokenization import Tokenizer, TokenizerError
from litebert.tokenization.added_tokens import added_token_pieces
from litebert.tokenization.vocabulary import check_vocabulary, special_ids
from litebert.train.run_config import PretrainConfig

log = logging.getLogger("litebert")

# The files transformers writes for a tokenizer, in any family's layout.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "added_tokens.json", "vocab.txt", "spiece.model", "vocab.json", "merges.txt")
# A model directory's own files, which the export writes anew.
MODEL_FILES = ("config.json", WEIGHTS_NAME, WEIGHTS_INDEX_NAME, TORCH_WEIGHTS_NAME,
               EXTRA_HEADS_NAME)
# The roles a run's sources play, and where an ELECTRA export keeps each.
ROLES = ("model", "generator")
ELECTRA_DIRS = {"model": "discriminator", "generator": "generator"}


@dataclass(frozen=True)
class SourceModel:
    """One model directory a run starts from, read once."""

    directory: Path
    config: ModelConfig
    state: dict[str, torch.Tensor]  # every tensor under our canonical keys
    unused: list[str]  # the file's keys that stand for no parameter of ours
    class_name: str  # our class its config.json names (BACKBONE_CLASS for a bare encoder)

    @property
    def weights_read(self) -> int:
        return len(self.state) + len(self.unused)


Sources = dict[str, SourceModel]  # role ("model", "generator") -> its directory


# ---- reading --------------------------------------------------------------------------------

def model_directory(path: str | Path, flag: str = "--from") -> dict[str, Path]:
    """The model directories a path stands for, by role: a model directory itself, a run
    directory's export, or an ELECTRA export's discriminator (and its generator)."""
    path = Path(path)
    if (path / "export").is_dir():  # a run directory (its config.json is the run's)
        return model_directory(path / "export", flag)
    if (path / "config.json").is_file() or (path / "albert_config.json").is_file():
        return {"model": path}
    found = {role: path / name for role, name in ELECTRA_DIRS.items()
             if (path / name / "config.json").is_file()}
    if "model" in found:
        return found
    if (path / "state.json").is_file():  # a training checkpoint, not a model
        raise CheckpointError(
            f"{flag} {path}: a training checkpoint, not a model directory; continue its run "
            f"with --resume {path}, or write its model with `litebert export RUN_DIR` and "
            f"start from that")
    what = "not a directory" if not path.is_dir() else "no config.json (nor a run's export/, " \
                                                        "nor an ELECTRA export's discriminator/)"
    raise CheckpointError(f"{flag} {path}: {what}")


def read_source(directory: Path, flag: str) -> SourceModel:
    """A model directory's config, weights under our keys and class; CheckpointError or
    ConfigError naming the file for a directory that cannot be read."""
    if not has_tokenizer(directory):
        raise CheckpointError(
            f"{flag} {directory}: no tokenizer files (tokenizer.json, vocab.txt, spiece.model "
            f"or vocab.json + merges.txt); a model continues on data built with its own "
            f"vocabulary, so its directory must hold it")
    config, state, unused, _ = read_canonical(directory)
    name = named_class(config) or BACKBONE_CLASS
    return SourceModel(directory, config, state, unused, name)


def has_tokenizer(directory: Path) -> bool:
    """Whether a directory holds a vocabulary in one of transformers' layouts."""
    return any((directory / name).is_file() for name in
               ("tokenizer.json", "vocab.txt", "spiece.model")) \
        or all((directory / name).is_file() for name in ("vocab.json", "merges.txt"))


def open_sources(start_from: str, generator_from: str | None) -> Sources:
    """Every directory a run starts from, by role; --generator-from replaces the generator an
    ELECTRA export would give."""
    paths = model_directory(start_from)
    if generator_from is not None:
        paths["generator"] = model_directory(generator_from, "--generator-from")["model"]
    flags = {"model": "--from", "generator": "--generator-from"}
    return {role: read_source(path, flags[role]) for role, path in paths.items()}


# ---- the config and the vocabulary ----------------------------------------------------------

def start_config(source: SourceModel, overrides: dict, data_tokenizer: Tokenizer) -> ModelConfig:
    """DIR's config with the run's model_overrides, its embedding table grown to the data's
    tokenizer where words were added (`litebert data build --add-tokens`). Whether an
    override changes a parameter's shape shows when the weights are loaded (load_start)."""
    config = source.config.replace(**overrides) if overrides else source.config
    if len(data_tokenizer) > config.vocab_size:
        config = config.replace(vocab_size=len(data_tokenizer))
    return config


def check_start_vocabulary(source: SourceModel, data_tokenizer: Tokenizer,
                           data_dir: Path) -> dict[int, list[int]]:
    """The data's tokenizer must be DIR's (the same tokens by id and special ids), or DIR's
    with words added after its last id; else one sentence naming both, before any step.
    Returns the added words' ids with the ids of the pieces each had before."""
    where, model_where = f"--data {data_dir}", str(source.directory)
    try:
        own = Tokenizer.from_pretrained(source.directory)
    except TokenizerError as err:
        raise CheckpointError(f"--from {source.directory}: its tokenizer cannot be read "
                              f"({err})") from None
    added = added_token_pieces(data_dir / "tokenizer")
    if added and sorted(added) != list(range(len(own), len(data_tokenizer))):
        raise TokenizerError(
            f"{where}: its added words have ids {min(added)}..{max(added)}, but the model in "
            f"{model_where} has {len(own)} tokens: build the data with --tokenizer "
            f"{model_where} --add-tokens FILE")
    if not added:
        check_vocabulary(data_tokenizer, own, max(source.config.vocab_size, len(own)),
                         data_where=where, model_where=model_where)
        return added
    ids = range(len(own))  # with added words: the model's own ids must be the data's first
    first = next((i for i, a, b in zip(ids, own.convert_ids_to_tokens(ids),
                                       data_tokenizer.convert_ids_to_tokens(ids),
                                       strict=True) if a != b), None)
    if first is not None or special_ids(own) != special_ids(data_tokenizer):
        what = f"id {first} differs" if first is not None else "other special ids"
        raise TokenizerError(f"{where} was built with another vocabulary than the model in "
                             f"{model_where} ({what}); build it with --tokenizer {model_where}")
    return added


def add_word_rows(state: dict[str, torch.Tensor], own: dict[str, torch.Tensor],
                  rows: int, added: dict[int, list[int]]) -> list[str]:
    """Give each added word a row, the mean of its former pieces' rows, in every tensor of
    `state` indexed by token id (DIR's `rows` first rows: the word embeddings, an MLM
    bias), grown to the module's size; returns the keys changed."""
    changed = []
    for key, value in state.items():
        target = own.get(key)
        if not added or target is None or value.dim() == 0 or value.shape[0] != rows \
                or target.shape[1:] != value.shape[1:] or target.shape[0] < rows:
            continue
        grown = torch.cat([value, value.new_zeros((target.shape[0] - rows, *value.shape[1:]))])
        for new_id, pieces in added.items():
            grown[new_id] = value[pieces].float().mean(0).to(value.dtype)
        state[key] = grown
        changed.append(key)
    return changed


# ---- loading --------------------------------------------------------------------------------

def load_start(model: nn.Module, state: dict[str, torch.Tensor], sources: Sources,
               overrides: dict, added: dict[int, list[int]] | None = None) -> None:
    """Copy `state` (the objective's module keys, from start_state) into `model`, which was
    just built and initialised; name what stays newly initialised and what of the sources
    is not used. A shape that differs is a CheckpointError naming the key and the cause.
    added: words added to the vocabulary, whose rows are built from their pieces'."""
    own = model.state_dict()
    grown = add_word_rows(state, own, sources["model"].config.vocab_size, added or {})
    if grown:
        log.info("%d added word(s): rows are the mean of each word's former pieces in %s",
                 len(added or {}), ", ".join(grown))
    unused = [f"{s.directory.name}/{k}" for s in sources.values() for k in s.unused]
    loaded: dict[str, torch.Tensor] = {}
    # A file may give one tensor under two names (ModernBERT's MLM head is also its
    # classifiers' `head.*`): a name the module lacks is unused only if no other was loaded.
    wanted = {id(v) for k, v in state.items() if k in own}
    for key, value in state.items():
        if key not in own:
            if id(value) not in wanted:
                unused.append(key)
            continue
        if tuple(value.shape) != tuple(own[key].shape):
            raise CheckpointError(_shape_sentence(key, value, own[key], sources, overrides))
        loaded[key] = value.to(own[key].dtype)
    model.load_state_dict({**own, **loaded})
    fresh = [k for k in own if k not in loaded]
    where = ", ".join(str(s.directory) for s in sources.values())
    log.info("started from %s: %d of the model's %d tensors loaded%s", where, len(loaded),
             len(own), f"; newly initialised: {grouped(fresh)}" if fresh else "")
    if unused:
        log.info("not used from %s: %s", where, grouped(unused))


def _shape_sentence(key: str, value: torch.Tensor, built: torch.Tensor, sources: Sources,
                    overrides: dict) -> str:
    source = next(iter(sources.values())).directory
    cause = (f"model_overrides {overrides} may change dropout and similar fields, not the "
             f"shapes of the model in {source}" if overrides else
             "the objective's settings build another shape (an ELECTRA generator: set "
             "objective.generator_size and objective.generator_layers to its share of the "
             "discriminator's width and depth)")
    return (f"--from {source}: {key} has shape {tuple(value.shape)} there, the run builds "
            f"{tuple(built.shape)}: {cause}")


def grouped(keys: list[str]) -> str:
    """Keys by their module, layer numbers as N, with counts (a module's one key in full):
    short enough for a log line however many layers a model has."""
    def module(key: str) -> str:
        parts = ["N" if p.isdigit() else p for p in key.split(".")[:-1]]
        return ".".join(parts) or key

    counts = Counter(module(k) for k in keys)
    alone = {module(k): k for k in keys if counts[module(k)] == 1}  # named in full
    return ", ".join(alone.get(name) or f"{name}.* ({n})" for name, n in counts.items())


# ---- the export -----------------------------------------------------------------------------

def finish_export(export: Path, run_dir: Path, cfg: PretrainConfig,
                  sources: Sources | None = None) -> None:
    """After the objective's export of a run: a run started from directories gets their
    classes and files back (`sources` as the run read them, else read again)."""
    if cfg.start_from is None:
        return
    sources = sources or open_sources(cfg.start_from, cfg.generator_from)
    run_tokens = len(Tokenizer.from_pretrained(run_dir / "tokenizer"))
    own_tokens = len(Tokenizer.from_pretrained(sources["model"].directory))
    export_as_sources(export, sources, keep_tokenizer=run_tokens != own_tokens)


def role_directories(export: Path) -> dict[str, Path]:
    """Where an export keeps each role's model: itself, or ELECTRA's two directories."""
    if (export / "config.json").is_file():
        return {"model": export}
    return {role: export / name for role, name in ELECTRA_DIRS.items()
            if (export / name / "config.json").is_file()}


def export_as_sources(export: Path, sources: Sources, keep_tokenizer: bool) -> None:
    """Give each exported directory its source's class and files: a directory saved as
    another class is re-saved as the source's (the heads that class lacks are kept beside it,
    litebert_heads.safetensors), and the source's tokenizer and other files are copied in.
    keep_tokenizer: the run's tokenizer differs from the source's (added tokens) and stays."""
    written = role_directories(export)
    for role, source in sources.items():
        if role in written:
            _as_class(written[role], source)
            _copy_files(source.directory, written[role], keep_tokenizer)


def _as_class(directory: Path, source: SourceModel) -> None:
    """Re-save an exported directory as the source's class, keeping the heads it lacks; what
    the export left out (a pooler that MLM alone never trains) is the source's, unchanged."""
    config, class_name = read_config(directory), source.class_name
    written = named_class(config) or BACKBONE_CLASS
    if written == class_name:
        return
    # Read back through the class written: its keys once (a file may alias a head, as
    # ModernBERT's MLM head is also its classifiers' `head.*`), and the heads kept beside.
    state = {**source.state,
             **canonical_state(model_class(written, config).from_pretrained(directory)),
             **extra_heads(directory)}
    model = model_class(class_name, config)(config)
    own = set(canonical_state(model))
    bare = class_name == BACKBONE_CLASS
    model.load_state_dict({(k[len("backbone."):] if bare else k): v for k, v in state.items()
                           if k in own})
    kept = {k: v for k, v in state.items() if k not in own}
    (directory / EXTRA_HEADS_NAME).unlink(missing_ok=True)
    model.save_pretrained(directory)
    if kept:
        theirs = family(config.model_type).transformers_class(class_name)
        save_extra_heads(directory, kept, f"{theirs} (the class of the directory this run "
                         f"started from) has no place for them")


def _copy_files(source: Path, target: Path, keep_tokenizer: bool) -> None:
    """The source directory's files that are not its model (tokenizer, sentence-transformers
    modules, README) into the export; the run's own tokenizer files give way to the source's
    unless keep_tokenizer."""
    if not keep_tokenizer:
        for name in TOKENIZER_FILES:
            (target / name).unlink(missing_ok=True)
    for path in source.iterdir():
        if path.name in MODEL_FILES or (keep_tokenizer and path.name in TOKENIZER_FILES):
            continue
        if path.is_dir():
            if not any(p.suffix in (".safetensors", ".bin") for p in path.rglob("*")):
                shutil.copytree(path, target / path.name, dirs_exist_ok=True)
        elif path.suffix not in (".safetensors", ".bin", ".pt", ".ckpt"):
            shutil.copy2(path, target / path.name)
