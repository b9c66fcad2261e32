"""The same documents as JSON lines, as a Parquet file (several row groups) and as a folder
laid out exactly as `datasets.Dataset.save_to_disk` writes it (Arrow IPC stream shards,
dataset_info.json, state.json), written with pyarrow alone."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tests.data.builds import WORDS  # the words the test tokenizers know


def documents(n: int = 40, seed: int = 0) -> list[dict]:
    """Records {"text", "label"}: a few paragraphs of sentences, a label 0-2."""
    import random

    rng = random.Random(seed)
    rows = []
    for i in range(n):
        paragraphs = [" ".join(" ".join(rng.choices(WORDS, k=rng.randint(3, 12))).capitalize()
                               + "." for _ in range(rng.randint(1, 5)))
                      for _ in range(rng.randint(1, 3))]
        rows.append({"text": "\n\n".join(paragraphs), "label": i % 3})
    return rows


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_parquet(path: Path, rows: list[dict]) -> Path:
    """Row groups of a third of the rows: a document never depends on its row group."""
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=max(1, len(rows) // 3))
    assert pq.ParquetFile(path).num_row_groups >= 3
    return path


def write_dataset_folder(folder: Path, rows: list[dict], shards: int = 2,
                         batch_rows: int = 5) -> Path:
    """save_to_disk's layout: data-0000i-of-0000N.arrow (IPC streams whose schema carries
    datasets' "huggingface" metadata), dataset_info.json and state.json listing the shards."""
    folder.mkdir(parents=True)
    features = {name: {"dtype": "string" if isinstance(value, str) else "int64",
                       "_type": "Value"} for name, value in rows[0].items()}
    table = pa.Table.from_pylist(rows).replace_schema_metadata(
        {"huggingface": json.dumps({"info": {"features": features}})})
    per_shard = -(-len(rows) // shards)
    names = [f"data-{i:05d}-of-{shards:05d}.arrow" for i in range(shards)]
    for i, name in enumerate(names):
        part = table.slice(i * per_shard, per_shard)
        with pa.OSFile(str(folder / name), "wb") as sink, \
                pa.ipc.new_stream(sink, table.schema) as writer:
            for batch in part.to_batches(max_chunksize=batch_rows):
                writer.write_batch(batch)
    info = {"citation": "", "description": "", "features": features, "homepage": "",
            "license": ""}
    (folder / "dataset_info.json").write_text(json.dumps(info, indent=2, sort_keys=True))
    state = {"_data_files": [{"filename": name} for name in names],
             "_fingerprint": "0123456789abcdef", "_format_columns": None, "_format_kwargs": {},
             "_format_type": None, "_output_all_columns": False, "_split": None}
    (folder / "state.json").write_text(json.dumps(state, indent=2, sort_keys=True))
    return folder


def write_all(root: Path, rows: list[dict]) -> dict[str, Path]:
    """{"jsonl": ..., "parquet": ..., "arrow": ...}: one corpus in the three layouts."""
    root.mkdir(parents=True, exist_ok=True)
    return {"jsonl": write_jsonl(root / "docs.jsonl", rows),
            "parquet": write_parquet(root / "docs.parquet", rows),
            "arrow": write_dataset_folder(root / "docs_dataset", rows)}
