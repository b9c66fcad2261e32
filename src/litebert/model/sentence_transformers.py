"""sentence-transformers directories: the files around a transformers model that make it a
sentence encoder, read and written here (the model itself is hub.py's).

A directory that `sentence_transformers.SentenceTransformer(DIR)` loads holds:

    modules.json                  the module list: Transformer -> Pooling (-> Normalize)
    config.json, model.safetensors, tokenizer files
                                  the Transformer module (path "" in modules.json: the
                                  directory itself; older exports use a folder)
    sentence_bert_config.json     {"max_seq_length": N, "do_lower_case": false}
    1_Pooling/config.json         the pooling mode, in the legacy boolean keys every
                                  sentence-transformers version reads
    config_sentence_transformers.json
                                  {"similarity_fn_name": "cosine"}

litebert reads the three modules only: a Dense, a LayerNorm or any other module changes the
embeddings, and is refused (naming modules.json) rather than skipped. Of the pooling modes,
"mean" and "cls" (sentence-transformers' cls: the first token the attention mask keeps) are
read as such, "lasttoken" as the family's summary token where that is the last one (XLNet's
<cls>, with left padding); the others (max, weighted mean, ...) are refused. Without a
Normalize module sentence-transformers' embeddings keep their length; litebert's are always
unit length, which changes no cosine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from litebert.config import ConfigError, read_json_object
from litebert.files import atomic_write_json

MODULES = "modules.json"
SETTINGS = "sentence_bert_config.json"
POOLING_DIR = "1_Pooling"
ST_CONFIG = "config_sentence_transformers.json"
# The module types as the sentence-transformers 2.x exports name them; every later version
# resolves these names. Read: any dotted path ending in the class name.
TYPES = {"Transformer": "sentence_transformers.models.Transformer",
         "Pooling": "sentence_transformers.models.Pooling",
         "Normalize": "sentence_transformers.models.Normalize"}
# Pooling config keys of sentence-transformers before 6, one boolean per mode.
LEGACY_MODES = {"pooling_mode_cls_token": "cls", "pooling_mode_max_tokens": "max",
                "pooling_mode_mean_tokens": "mean",
                "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
                "pooling_mode_weightedmean_tokens": "weightedmean",
                "pooling_mode_lasttoken": "lasttoken"}
READ_MODES = ("mean", "cls", "lasttoken")


class SentenceTransformersError(ConfigError):
    """A sentence-transformers directory litebert cannot read as it is; the message names
    the file."""


@dataclass(frozen=True)
class SentenceTransformersLayout:
    """What a sentence-transformers directory says around its transformers model."""

    directory: Path
    transformer: Path  # the Transformer module's folder: config.json, weights, tokenizer
    pooling_mode: str  # sentence-transformers' name: "mean", "cls" or "lasttoken"
    max_seq_length: int | None  # tokens an input is cut to; None: not said
    do_lower_case: bool  # inputs lowercased before the tokenizer
    normalize: bool  # a Normalize module ends the list


def is_sentence_transformers_dir(directory: str | Path) -> bool:
    return (Path(directory) / MODULES).is_file()


def read_layout(directory: str | Path) -> SentenceTransformersLayout | None:
    """The layout of a sentence-transformers directory; None for a directory without
    modules.json (a plain model directory)."""
    directory = Path(directory)
    if not is_sentence_transformers_dir(directory):
        return None
    modules = _read_modules(directory / MODULES)
    transformer = directory / modules["Transformer"]
    settings_path = transformer / SETTINGS
    if not settings_path.is_file():  # older exports keep it beside modules.json
        settings_path = directory / SETTINGS
    settings = read_json_object(settings_path) if settings_path.is_file() else {}
    length = settings.get("max_seq_length")
    if length is not None and (not isinstance(length, int) or length < 1):
        raise SentenceTransformersError(f"{settings_path}: max_seq_length {length!r} is not a "
                                        "positive integer")
    return SentenceTransformersLayout(
        directory=directory, transformer=transformer,
        pooling_mode=read_pooling_mode(directory / modules["Pooling"] / "config.json"),
        max_seq_length=length, do_lower_case=bool(settings.get("do_lower_case", False)),
        normalize="Normalize" in modules)


def _read_modules(path: Path) -> dict[str, str]:
    """{class name: folder relative to the directory} of modules.json, which must list a
    Transformer, then a Pooling, then optionally a Normalize."""
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise SentenceTransformersError(f"{path}, line {err.lineno}: invalid JSON "
                                        f"({err.msg})") from None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise SentenceTransformersError(f"{path}: expected a JSON list of module objects")
    names = [str(e.get("type", "")).rsplit(".", 1)[-1] for e in entries]
    if names not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise SentenceTransformersError(
            f"{path}: modules {' -> '.join(names) or 'none'}; litebert reads Transformer -> "
            "Pooling (-> Normalize) only, as any other module would change the embeddings")
    folders = {}
    for name, entry in zip(names, entries, strict=True):
        folder = str(entry.get("path", ""))
        if PurePosixPath(folder).is_absolute() or ".." in PurePosixPath(folder).parts:
            raise SentenceTransformersError(f"{path}: module path {folder!r} leaves the "
                                            "directory")
        folders[name] = folder
    return folders


def read_pooling_mode(path: Path) -> str:
    """The one pooling mode of a Pooling module's config.json (sentence-transformers 6's
    `pooling_mode`, or the earlier boolean keys), among READ_MODES."""
    config = read_json_object(path)
    mode: Any = config.get("pooling_mode")
    if mode is None:
        mode = [m for key, m in LEGACY_MODES.items() if config.get(key)] or ["mean"]
    modes = [mode] if isinstance(mode, str) else list(mode)
    if len(modes) != 1 or modes[0] not in READ_MODES:
        raise SentenceTransformersError(
            f"{path}: pooling {' + '.join(map(str, modes))}; litebert reads one of "
            f"{', '.join(READ_MODES)}")
    if config.get("include_prompt") is False:
        raise SentenceTransformersError(f"{path}: include_prompt false (prompts left out of "
                                        "the pooling) is not read by litebert")
    return modes[0]


def write_layout(directory: str | Path, pooling_mode: str, max_seq_length: int,
                 dimension: int, do_lower_case: bool = False) -> list[Path]:
    """The sentence-transformers files around a model directory already written there
    (Transformer -> Pooling(`pooling_mode`) -> Normalize); returns the files written."""
    if pooling_mode not in READ_MODES:
        raise ValueError(f"pooling mode {pooling_mode!r}: choose from {', '.join(READ_MODES)}")
    directory = Path(directory)
    modules = [{"idx": i, "name": str(i), "path": folder, "type": TYPES[name]}
               for i, (name, folder) in enumerate((("Transformer", ""),
                                                   ("Pooling", POOLING_DIR),
                                                   ("Normalize", "2_Normalize")))]
    pooling = {"word_embedding_dimension": dimension,
               **{key: mode == pooling_mode for key, mode in LEGACY_MODES.items()}}
    written = [atomic_write_json(directory / MODULES, modules),
               atomic_write_json(directory / POOLING_DIR / "config.json", pooling),
               atomic_write_json(directory / SETTINGS, {"max_seq_length": max_seq_length,
                                                        "do_lower_case": do_lower_case}),
               atomic_write_json(directory / ST_CONFIG, {"similarity_fn_name": "cosine"})]
    (directory / "2_Normalize").mkdir(exist_ok=True)  # Normalize has no files
    return written
