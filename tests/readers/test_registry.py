"""The reader registry: how `auto` recognises each format (folder, first bytes, name), that a
new format is one entry, and that binary data is never read as text."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from litebert.readers import (
    FORMATS,
    READERS,
    CorpusError,
    CorpusStats,
    Document,
    Format,
    detect_format,
    expand,
    read_documents,
)
from tests.readers.tables import documents, write_all, write_dataset_folder, write_parquet


def read(inputs, **kw) -> tuple[list[Document], CorpusStats]:
    stats = CorpusStats()
    return list(read_documents(inputs, stats=stats, **kw)), stats


def test_every_format_has_one_entry_and_is_a_choice():
    assert FORMATS == ("auto", "bert", "paragraphs", "jsonl", "parquet", "arrow")
    assert all(READERS[name].name == name for name in FORMATS[1:])


def test_the_same_documents_and_labels_from_every_record_format(tmp_path):
    rows = documents(25)
    read_all = {kind: read([path], label_field="label")
                for kind, path in write_all(tmp_path, rows).items()}
    expected = [(d.sentences, d.label) for d in read_all["jsonl"][0]]
    assert len(expected) == 25 and expected[0][1] == "0"
    for kind, (docs, stats) in read_all.items():
        assert [(d.sentences, d.label) for d in docs] == expected, kind
        assert stats.formats == {kind: 1} and stats.files == 1


def test_formats_are_recognised_by_their_bytes_not_only_their_names(tmp_path):
    rows = documents(6)
    parquet = write_parquet(tmp_path / "docs.dat", rows)  # no telling name
    folder = write_dataset_folder(tmp_path / "ds", rows, shards=1)
    shard = folder / "data-00000-of-00001.arrow"
    stream = shard.rename(tmp_path / "shard.bin")
    ipc_file = tmp_path / "table.feather"  # the IPC file layout (ARROW1)
    with pa.OSFile(str(ipc_file), "wb") as sink, \
            pa.ipc.new_file(sink, pa.Table.from_pylist(rows).schema) as writer:
        writer.write_table(pa.Table.from_pylist(rows))
    assert [detect_format(p) for p in (parquet, stream, ipc_file)] == [
        "parquet", "arrow", "arrow"]
    expected = [d.sentences for d in read([parquet])[0]]
    assert [d.sentences for d in read([stream])[0]] == expected
    assert [d.sentences for d in read([ipc_file])[0]] == expected


def test_a_saved_dataset_is_one_input_in_a_walked_directory(tmp_path):
    root = tmp_path / "corpus"
    write_dataset_folder(root / "b_dataset", documents(8))
    (root / "a.txt").write_text("One sentence here.\nAnd another one.\n")
    (root / "c.txt").write_text("Last file here.\nIt ends.\n")
    assert [p.relative_to(root).as_posix() for p in expand([root])] == [
        "a.txt", "c.txt", "b_dataset"]  # a folder's files, then its folders
    docs, stats = read([root])
    assert stats.formats == {"paragraphs": 2, "arrow": 1} and stats.files == 3
    assert len(docs) == 2 + 8  # the dataset's JSON metadata is not read as documents
    assert not any("dataset_info" in d.source or "state.json" in d.source for d in docs)


def test_state_json_decides_the_shard_order(tmp_path):
    rows = [{"text": f"Document number {i}. It is short."} for i in range(9)]
    folder = write_dataset_folder(tmp_path / "ds", rows, shards=3)
    state = json.loads((folder / "state.json").read_text())
    state["_data_files"].reverse()
    (folder / "state.json").write_text(json.dumps(state))
    docs, _ = read([folder])
    assert [d.sentences[0] for d in docs[:3]] == [f"Document number {i}." for i in (6, 7, 8)]
    assert docs[0].source == f"{folder / 'data-00002-of-00003.arrow'}:1"
    (folder / "data-00000-of-00003.arrow").unlink()
    with pytest.raises(CorpusError, match="lists the shard 'data-00000-of-00003.arrow', "
                                          "which is missing"):
        read([folder])


def test_a_datasetdict_folder_asks_for_a_split(tmp_path):
    root = tmp_path / "dd"
    for split in ("train", "test"):
        write_dataset_folder(root / split, documents(3))
    (root / "dataset_dict.json").write_text(json.dumps({"splits": ["train", "test"]}))
    with pytest.raises(CorpusError, match=r"splits \['test', 'train'\].*e\.g\. .*dd/test"):
        read([root])
    assert len(read([root / "train"])[0]) == 3


def test_columns_that_cannot_be_text_are_errors_naming_them(tmp_path):
    paths = write_all(tmp_path, documents(4))
    for kind in ("parquet", "arrow"):
        with pytest.raises(CorpusError, match=rf"{paths[kind].name}.*no column 'body' \(the "
                                              r"text field, --text-field\); the columns are "
                                              r"\['text', 'label'\]"):
            read([paths[kind]], text_field="body")
    nested = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"paragraphs": [["A b.", "C d."]], "n": [1]}), nested)
    with pytest.raises(CorpusError, match=r"nested\.parquet: column 'paragraphs' .* is nested "
                                          r"\(list<"):
        read([nested], text_field="paragraphs")
    with pytest.raises(CorpusError, match=r"column 'n' .* holds int64, not text"):
        read([nested], text_field="n")


def test_null_texts_are_counted_and_labels_read_as_text(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"text": ["First one. Second.", None, "Third."],
                             "label": [True, False, None]}), path)
    docs, stats = read([path], label_field="label")
    assert [(d.source, d.label) for d in docs] == [(f"{path}:1", "True"), (f"{path}:3", None)]
    assert stats.missing_text == 1 and stats.missing_label == 1
    assert stats.examples["missing_text"] == [f"{path}:2: 'text' is null"]


def test_binary_data_is_never_read_as_text(tmp_path):
    blob = bytes(range(256)) * 40
    for name, data in (("a.txt", blob), ("b.jsonl", blob), ("c.txt.gz", gzip.compress(blob)),
                       ("d.bin", b"\x89PNG\r\n" + blob)):
        path = tmp_path / name
        path.write_bytes(data)
        for fmt in ("auto", "bert", "jsonl"):
            with pytest.raises(CorpusError, match=rf"{path}: not text \(it holds NUL bytes\).*"
                                                  "reads text.*JSON lines.*Parquet.*save_to_disk"):
                read([path], fmt=fmt)
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("Caf\xe9 cr\xe8me \xe0 la fran\xe7aise. \xc9t\xe9 \xe9l\xe9gant.\n"
                       .encode("latin-1") * 50)
    with pytest.raises(CorpusError, match=r"latin1\.txt: not text \(\d+% of its first"):
        read([latin1])


def test_a_format_named_against_its_bytes_is_an_error(tmp_path):
    parquet = write_parquet(tmp_path / "docs.parquet", documents(3))
    with pytest.raises(CorpusError, match=r"docs\.parquet: this is one of the Parquet files "
                                          ".*, not bert; read it with format parquet"):
        read([parquet], fmt="bert")
    gz = tmp_path / "docs.parquet.gz"
    gz.write_bytes(gzip.compress(parquet.read_bytes()))
    with pytest.raises(CorpusError, match=r"docs\.parquet\.gz: a compressed Parquet file; "
                                          "decompress it first"):
        read([gz])


def test_a_new_format_is_one_registry_entry(tmp_path, monkeypatch):
    def read_shouting(path: Path, stats, max_chars, *, text_field, label_field):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            yield Document([line.capitalize() + "."], f"{path}:{i}")

    monkeypatch.setitem(READERS, "shout", Format("shout", read_shouting, "shouting (.shout)",
                                                 suffixes=(".shout",)))
    path = tmp_path / "a.shout"
    path.write_text("HELLO\nWORLD\n")
    docs, stats = read([path])
    assert [d.sentences for d in docs] == [["Hello."], ["World."]]
    assert stats.formats == {"shout": 1}
