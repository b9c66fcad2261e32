"""`data build --shard I/N` shares the corpus: every shard gets work while there are N
documents, the shards' bytes are balanced to within one part, and a shard that gets nothing
says so (and still merges into the single build's directory)."""

from __future__ import annotations

import json
import logging

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from litebert.data.builder import BuildConfig, build
from litebert.data.merge import merge
from litebert.data.parts import Part, document_span, read_part
from litebert.data.shard_plan import assign, plan_shards
from litebert.readers import CorpusStats
from tests.data.builds import WORDS

CONFIG = BuildConfig(max_seq_length=64, format="bert", heldout_fraction=0.1)


def bert_file(path, sizes):
    """BERT format: one document of about `sizes[i]` bytes each, sentences of 10 words."""
    docs = []
    for i, size in enumerate(sizes):
        words = [WORDS[(i + k) % len(WORDS)] for k in range(max(size // 6, 3))]
        lines = [" ".join(words[at:at + 10]).capitalize() + "." for at in range(0, len(words), 10)]
        docs.append("\n".join(lines))
    path.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    return path


def whole_parts(sizes):
    """Parts read whole (as compressed files are), of the given sizes."""
    return [Part(index=i, file=i, path=f"{i}.gz", kind="bert", start=0, stop=-1, size=size,
                 first=True, last=True) for i, size in enumerate(sizes)]


def documents_of(shard):
    stats = CorpusStats()
    return sum(1 for part in shard for _ in read_part(part, document_span(part), stats, "text"))


def check_balanced(shards):
    """Bytes of each shard within one part of an even share; the parts tile the corpus."""
    total = sum(p.size for shard in shards for p in shard)
    largest = max(p.size for shard in shards for p in shard)
    for shard in shards:
        assert abs(sum(p.size for p in shard) - total / len(shards)) <= largest


def test_parts_of_about_even_size_give_every_shard_one():
    """By where each part starts, [99, 101, 100, 100] over 4 shards gave 2, 0, 1 and 1."""
    shards = assign(whole_parts([99, 101, 100, 100]), 4)
    assert [len(s) for s in shards] == [1, 1, 1, 1]
    assert [len(s) for s in assign(whole_parts([1490, 1500]), 2)] == [1, 1]
    check_balanced(assign(whole_parts([5, 300, 7, 90, 60, 200, 1, 40]), 3))


def test_small_files_are_cut_so_every_shard_has_work_balanced(tmp_path):
    """Two files far under PART_BYTES over 2 and 4 shards: one file each, then both cut."""
    files = [bert_file(tmp_path / "a.txt", [300] * 50), bert_file(tmp_path / "b.txt", [290] * 50)]
    two = plan_shards(files, "bert", "text", 2)
    assert [{p.path for p in s} for s in two] == [{str(files[0])}, {str(files[1])}]
    four = plan_shards(files, "bert", "text", 4)
    assert all(documents_of(s) for s in four)
    check_balanced(four)
    parts = [p for s in four for p in s]  # the parts tile each file, in corpus order
    for path in files:
        mine = [p for p in parts if p.path == str(path)]
        assert mine[0].start == 0 and mine[-1].stop == path.stat().st_size
        assert all(a.stop == b.start for a, b in zip(mine, mine[1:], strict=False))
    assert documents_of(parts) == 100


def test_n_documents_give_n_shards_work_however_long_one_is(tmp_path):
    corpus = bert_file(tmp_path / "c.txt", [60, 60, 60, 30_000])
    shards = plan_shards([corpus], "bert", "text", 4)
    assert [documents_of(s) for s in shards] == [1, 1, 1, 1]


def test_a_shard_without_documents_warns_and_the_shards_merge_to_the_single_build(
        tmp_path, corpus_and_tokenizer, caplog):
    _, tok = corpus_and_tokenizer
    corpus = bert_file(tmp_path / "two.txt", [400, 400])  # 2 documents for 3 shards
    empty = [i for i, s in enumerate(plan_shards([corpus], "bert", "text", 3)) if not s]
    assert len(empty) == 1
    for i in range(3):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="litebert"):
            build([corpus], tok, tmp_path / "shards" / str(i), CONFIG, shard=(i, 3))
        warned = [r.getMessage() for r in caplog.records if "gets no part" in r.getMessage()]
        assert warned == ([f"shard {i}/3 gets no part of the corpus: it has fewer than 3 pieces "
                           "to share (documents, or files read whole: compressed, paragraphs, "
                           "Arrow), so this shard will be empty; build with fewer shards"]
                          if i in empty else [])
    merged = merge([tmp_path / "shards"], tmp_path / "merged")
    single = build([corpus], tok, tmp_path / "single", CONFIG)
    assert {k: v for k, v in merged.items() if k != "seconds"} == \
        {k: v for k, v in single.items() if k != "seconds"}
    shard_counts = [json.loads((tmp_path / "shards" / str(i) / "manifest.json").read_text())
                    ["counts"]["documents"] for i in range(3)]
    assert sorted(shard_counts) == [0, 1, 1]


@pytest.mark.parametrize("shards", [2, 3, 5])
def test_parquet_row_groups_are_shared_too(tmp_path, shards):
    rows = [{"text": f"Row {i} is here. It has two sentences."} for i in range(30)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "t.parquet", row_group_size=5)
    plan = plan_shards([tmp_path / "t.parquet"], "parquet", "text", shards)
    assert all(plan) and sum(p.stop - p.start for s in plan for p in s) == 6
