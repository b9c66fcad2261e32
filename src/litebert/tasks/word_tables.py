"""Words with tags (token classification): the splits of a data folder, their label set,
the tagging scheme and the scores. Imports no torch; tasks/tokens.py trains on what this
reads.

A data folder holds train.*, dev.* (or validation.*, valid.*) and optionally test.*, each
one of:
- a CoNLL file (any other name: .txt, .conll, ...; tasks/conll.py): a word per line, the
  tag in the last column or `tag_column`, blank lines between sentences, -DOCSTART- lines
  skipped;
- JSON lines (.jsonl, .json), one sentence per object;
- Parquet, an Arrow file, or a folder that datasets' save_to_disk wrote (a DatasetDict's
  train/, validation/, test/ folders too), read with pyarrow (litebert.readers.open_table).
A table's sentence is a row: `tokens_column` a list of words, `tags_column` a list of tags
of the same length, as strings or as integers. Integer tags take their names from the
table's features where datasets wrote them (a ClassLabel inside the list feature, in the
Parquet/Arrow schema metadata "huggingface" or a saved folder's dataset_info.json), else
from `label_names`; without names they are an error that says how to give them.

The label set: `label_names` when given, else the training file's feature names, else the
tags of the training sentences (sorted, "O" first). A tag of any split outside it is an
error naming file:line, as is a row whose words and tags differ in number, a missing column
and a file without sentences: a tagging set with a hole in it is not trained on silently.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from litebert.files import open_bytes, strip_compression
from litebert.readers import CorpusError, Table, is_folder_input, open_table
from litebert.readers.arrow import INFO
from litebert.readers.columns import records
from litebert.tasks.conll import read_conll
from litebert.tasks.entities import normalize_scheme, parse_tag, score_entities
from litebert.tasks.examples import TaskDataError
from litebert.tasks.registry import TokenOptions

# split -> the stems its file or folder may have (datasets names its dev split "validation")
SPLIT_STEMS = {"train": ("train",), "dev": ("dev", "validation", "valid"), "test": ("test",)}
JSON_SUFFIXES = (".jsonl", ".json")
OUTSIDE = "O"


@dataclass(frozen=True)
class TaggedSentence:
    """One sentence: its words, their tags (names) and where it is ("file:line" of its
    first word for CoNLL, of its record for JSON lines, "file:row" for the columnar tables)."""

    words: list[str]
    tags: list[str]
    where: str


@dataclass(frozen=True)
class _Raw:
    """A sentence as read: tags are strings or integers (ids into the table's names)."""

    words: list[str]
    tags: list[Any]
    file: str
    line: int  # 1-based line (row) of its first word (record)
    word_lines: bool  # CoNLL: word i sits on line `line + i`

    def where(self, word: int | None = None) -> str:
        if word is None:
            return f"{self.file}:{self.line}"
        if self.word_lines:
            return f"{self.file}:{self.line + word}"
        return f"{self.file}:{self.line} (word {word + 1})"


@dataclass(frozen=True)
class RawSplit:
    """One split file's sentences as read, and the names its features give integer tags."""

    path: Path
    sentences: list[_Raw]
    names: list[str] | None


@dataclass(frozen=True)
class TokenData:
    """A data folder's splits (train None when not training, test None when absent) with
    tags as names of `labels`, the label set in id order."""

    train: list[TaggedSentence] | None
    dev: list[TaggedSentence]
    test: list[TaggedSentence] | None
    labels: list[str]


# ---- finding and reading the splits -------------------------------------------------------

def find_split(directory: Path, split: str) -> Path | None:
    """The file (or saved dataset folder) of `split` in `directory`; an error when two are
    there, since which one is meant cannot be told."""
    stems = SPLIT_STEMS[split]
    found = sorted(p for p in directory.iterdir() if not p.name.startswith(".") and (
        (p.is_file() and Path(strip_compression(p.name)).stem in stems)
        or (p.name in stems and is_folder_input(p))))
    if len(found) > 1:
        raise TaskDataError(f"{directory}: {len(found)} {split} splits "
                            f"({', '.join(p.name for p in found)}); keep one")
    return found[0] if found else None


def read_split(path: Path, options: TokenOptions) -> RawSplit:
    """The sentences of one split file (or saved dataset folder), whatever its format."""
    try:
        table = open_table(path)
    except CorpusError as err:
        raise TaskDataError(str(err)) from None
    if table is not None:
        split = _read_columns(table, options)
    elif Path(strip_compression(path.name)).suffix.lower() in JSON_SUFFIXES:
        split = _read_jsonl(path, options)
    else:
        try:
            found = read_conll(path, options.tag_column)
        except ValueError as err:  # read_conll's message names file:line
            raise TaskDataError(str(err)) from None
        split = RawSplit(path, [_Raw(s.words, s.tags, str(path), s.line, True)
                                for s in found], None)
    if not split.sentences:
        raise TaskDataError(f"{path}: no sentences (an empty file?)")
    return split


def _sentence(record: dict, options: TokenOptions, file: str, line: int) -> _Raw:
    """A table record's words and tags, checked: lists of the same length."""
    where = f"{file}:{line}"
    for name in (options.tokens_column, options.tags_column):
        if name not in record:
            raise TaskDataError(f"{where}: no column {name!r}; the columns are {list(record)}")
    words, tags = record[options.tokens_column], record[options.tags_column]
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
        raise TaskDataError(f"{where}: column {options.tokens_column!r} is not a list of "
                            "strings (the sentence's words)")
    if not isinstance(tags, list) or not all(
            isinstance(t, str) or (isinstance(t, int) and not isinstance(t, bool))
            for t in tags):
        raise TaskDataError(f"{where}: column {options.tags_column!r} is not a list of "
                            "strings or integers (the words' tags)")
    if len(words) != len(tags):
        raise TaskDataError(f"{where}: {len(words)} words in {options.tokens_column!r} but "
                            f"{len(tags)} tags in {options.tags_column!r}")
    return _Raw(words, tags, file, line, False)


def _read_jsonl(path: Path, options: TokenOptions) -> RawSplit:
    sentences: list[_Raw] = []
    with open_bytes(path) as handle:
        for number, raw in enumerate(handle, 1):
            where = f"{path}:{number}"
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as err:
                raise TaskDataError(f"{where}: not UTF-8 text ({err.reason})") from None
            if not line.strip():
                continue
            if not sentences and line.lstrip().startswith("["):
                raise TaskDataError(f"{where}: a JSON array; this reads JSON lines (one object "
                                    "per line): convert it, e.g. with `jq -c '.[]'`")
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise TaskDataError(f"{where}: bad JSON: {err.msg} (column {err.colno})") \
                    from None
            if not isinstance(record, dict):
                raise TaskDataError(f"{where}: a JSON {type(record).__name__}, expected an "
                                    "object")
            sentences.append(_sentence(record, options, str(path), number))
    return RawSplit(path, sentences, None)


def _read_columns(table: Table, options: TokenOptions) -> RawSplit:
    columns = [options.tokens_column, options.tags_column]
    for name in columns:
        if name not in table.schema.names:
            raise TaskDataError(f"{table.path}: no column {name!r}; the columns are "
                                f"{table.schema.names}")
    sentences: list[_Raw] = []
    try:
        for where, record in records(table, columns):
            file, _, row = where.rpartition(":")
            sentences.append(_sentence(record, options, file, int(row)))
    except (OSError, ValueError) as err:  # pyarrow's errors: a damaged page
        if isinstance(err, TaskDataError):
            raise
        raise TaskDataError(f"{table.path}: unreadable ({type(err).__name__}: {err}); write "
                            "it again") from None
    return RawSplit(table.path, sentences, _feature_names(table, options.tags_column))


def _feature_names(table: Table, column: str) -> list[str] | None:
    """The ClassLabel names datasets wrote for `column`: in the schema metadata (Parquet and
    Arrow files datasets wrote), else in a saved folder's dataset_info.json."""
    found: list[dict] = []
    metadata = table.schema.metadata or {}
    if b"huggingface" in metadata:
        try:
            found.append(json.loads(metadata[b"huggingface"])["info"]["features"])
        except (ValueError, KeyError, TypeError):
            pass  # metadata of another shape: the folder's file may still say
    info = table.path / INFO
    if table.path.is_dir() and info.is_file():
        try:
            found.append(json.loads(info.read_text(encoding="utf-8"))["features"])
        except (ValueError, KeyError, TypeError) as err:
            raise TaskDataError(f"{info}: not a datasets info file ({err})") from None
    for features in found:
        names = class_names(features.get(column) if isinstance(features, dict) else None)
        if names is not None:
            return names
    return None


def class_names(feature: Any) -> list[str] | None:
    """The names of the ClassLabel a datasets feature holds, through Sequence / List (and the
    one-element list older datasets wrote for a list feature); None when it holds none."""
    while True:
        if isinstance(feature, list) and len(feature) == 1:
            feature = feature[0]
        elif not isinstance(feature, dict):
            return None
        elif feature.get("_type") == "ClassLabel":
            names = feature.get("names")
            return [str(n) for n in names] if isinstance(names, list) else None
        elif "feature" in feature:
            feature = feature["feature"]
        else:
            return None


# ---- the label set ---------------------------------------------------------------------------

def given_names(text: str | None) -> list[str] | None:
    """`label_names` ("O,B-PER,I-PER") as a list; None when not given."""
    if text is None:
        return None
    names = [name.strip() for name in text.split(",")]
    if not all(names) or len(set(names)) != len(names):
        raise TaskDataError(f"label_names={text!r}: give distinct, non-empty names, "
                            "comma-separated, in id order")
    return names


def label_set(source: RawSplit, given: list[str] | None) -> list[str]:
    """The labels in id order: `given`, else `source`'s feature names, else its string tags
    sorted ("O" first)."""
    if given is not None:
        return given
    if source.names is not None:
        return source.names
    numbered = next((s for s in source.sentences if any(isinstance(t, int) for t in s.tags)),
                    None)
    if numbered is not None:
        raise TaskDataError(f"{numbered.where()}: integer tags without names: name them in id "
                            "order with label_names (--label-names O,B-PER,I-PER,...), or "
                            "give a table whose features name them (datasets' ClassLabel)")
    tags = {t for s in source.sentences for t in s.tags}
    return sorted(tags, key=lambda t: (t != OUTSIDE, t))


def named(split: RawSplit, labels: list[str], whose: str) -> list[TaggedSentence]:
    """`split`'s sentences with every tag a name in `labels` (integers through the split's
    own feature names, else through `labels`); an error at the first tag outside them."""
    ids = split.names if split.names is not None else labels
    allowed = set(labels)
    out = []
    for s in split.sentences:
        tags = []
        for i, tag in enumerate(s.tags):
            if isinstance(tag, int):
                if not 0 <= tag < len(ids):
                    raise TaskDataError(f"{s.where(i)}: tag {tag} is not an id of the "
                                        f"{len(ids)} label names {ids}")
                tag = ids[tag]
            if tag not in allowed:
                raise TaskDataError(f"{s.where(i)}: tag {tag!r} is not in the label set "
                                    f"({whose}: {labels})")
            if not tag or tag != "".join(tag.split()):  # it would shift conlleval's columns
                raise TaskDataError(f"{s.where(i)}: tag {tag!r} is empty or holds whitespace")
            tags.append(tag)
        out.append(TaggedSentence(list(s.words), tags, s.where()))
    return out


def load_token_data(data: str | Path, options: TokenOptions, training: bool,
                    model_labels: list[str] | None = None) -> TokenData:
    """The splits of the folder `data`; the labels are `model_labels` when given (a
    fine-tuned model's, for evaluation), else as the module docstring says."""
    folder = Path(data)
    if not folder.is_dir():
        raise TaskDataError(f"{data}: expected a folder holding train.* and dev.* (or a "
                            "DatasetDict's train/ and validation/ folders)")
    paths = {split: find_split(folder, split) for split in SPLIT_STEMS}
    for split in ("train", "dev") if training else ("dev",):
        if paths[split] is None:
            stems = " or ".join(f"{stem}.*" for stem in SPLIT_STEMS[split])
            raise TaskDataError(f"{folder}: no {split} split ({stems}: CoNLL, JSON lines, "
                                "Parquet, Arrow, or a saved dataset folder)")
    raw = {split: read_split(path, options) for split, path in paths.items()
           if path is not None and (training or split != "train")}
    source = raw["train" if training else "dev"]
    given = model_labels or given_names(options.label_names)
    labels = label_set(source, given)
    whose = ("the model's labels" if model_labels else "label_names" if given else
             "the features' names" if source.names else f"the tags of {source.path.name}")
    split_sentences = {split: named(r, labels, whose) for split, r in raw.items()}
    return TokenData(split_sentences.get("train"), split_sentences["dev"],
                     split_sentences.get("test"), labels)


# ---- scheme and scores -----------------------------------------------------------------------

def entity_tags(labels: Sequence[str]) -> bool:
    """Whether every label is "O" or an entity tag (B-, I-, E-, S- and a type)."""
    try:
        for label in labels:
            parse_tag(label)
    except ValueError:
        return False
    return True


def tagging_scheme(choice: str, labels: Sequence[str],
                   sentences: Sequence[TaggedSentence]) -> str:
    """IOB1, IOB2 or BIOES: `choice`, or with "auto" read off the tags: BIOES where S- or E-
    tags exist, IOB1 where an entity of `sentences` starts with I- (after O or another
    type), else IOB2."""
    ends = any(label[:2] in ("S-", "E-") for label in labels)
    if choice != "auto":
        scheme = normalize_scheme(choice)
        if ends and scheme != "BIOES":
            raise TaskDataError(f"label_scheme={choice}: the labels hold S- or E- tags, "
                                "which only BIOES has")
        return scheme
    if ends:
        return "BIOES"
    for s in sentences:
        previous = OUTSIDE
        for tag in s.tags:
            if tag.startswith("I-") and previous[2:] != tag[2:]:
                return "IOB1"
            previous = tag
    return "IOB2"


def tag_metrics(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]],
                entities: bool, strict: bool = False, scheme: str = "IOB2"
                ) -> dict[str, float]:
    """Token accuracy; with entity tags also entity precision, recall and F1 (micro, as
    conlleval, or seqeval's strict mode) and each type's F1 ("PER_f1")."""
    if not entities:
        same = sum(g == p for gs, ps in zip(gold, predicted, strict=True)
                   for g, p in zip(gs, ps, strict=True))
        tokens = sum(map(len, gold))
        return {"accuracy": same / tokens if tokens else 0.0}
    scores = score_entities(gold, predicted, mode="strict" if strict else "default",
                            scheme=scheme)
    metrics = {"f1": scores.f1, "precision": scores.precision, "recall": scores.recall,
               "accuracy": scores.accuracy}
    metrics.update({f"{kind}_f1": s.f1 for kind, s in scores.per_type.items()})
    return metrics


def conll_word(word: str) -> str:
    """A word as one whitespace-free field of a predictions file (a table's word may hold a
    space, or be empty): runs of whitespace become "_"."""
    return "_".join(word.split()) or "_"
