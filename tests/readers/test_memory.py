"""Memory stays flat while documents stream from a large Parquet file or saved dataset: the
readers decode a record batch at a time (measured in a fresh process, as peak RSS growth)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.data.builds import WORDS

FILE_MB = 300
ROWS_PER_WRITE = 20_000  # ~60 MB of text: one Parquet row group, several Arrow batches

# Peak RSS (VmHWM) once the modules are imported, after a quarter of the documents, and at
# the end; in a fresh process, so that writing the file does not count.
MEASURE = """
import json, sys
def peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
import pyarrow.parquet
from litebert.readers import read_documents
base, quarter, count = peak(), None, 0
for doc in read_documents([sys.argv[1]], text_field="text"):
    count += 1
    if count == int(sys.argv[2]) // 4:
        quarter = peak()
print(json.dumps({"documents": count, "base": base, "quarter": quarter, "end": peak()}))
"""


def _texts(rng: np.random.Generator, n: int) -> list[str]:
    sentences = [" ".join(rng.choice(WORDS, 12)).capitalize() + "." for _ in range(500)]
    picks = rng.integers(0, len(sentences), (n, 25))  # ~3 KB a document
    return [" ".join(sentences[i] for i in row) for row in picks]


def _write(path, fmt: str) -> int:
    """A file of about FILE_MB MB, written a slice at a time; returns its documents."""
    rng = np.random.default_rng(0)
    schema = pa.schema([("text", pa.string()), ("label", pa.int64())])
    rows, size = 0, 0
    if fmt == "parquet":
        sink = pq.ParquetWriter(path, schema, compression="none")
    else:
        path.mkdir()
        (path / "dataset_info.json").write_text("{}")
        (path / "state.json").write_text(json.dumps(
            {"_data_files": [{"filename": "data-00000-of-00001.arrow"}]}))
        stream = pa.OSFile(str(path / "data-00000-of-00001.arrow"), "wb")
        sink = pa.ipc.new_stream(stream, schema)
    while size < FILE_MB * 1_000_000:
        texts = _texts(rng, ROWS_PER_WRITE)
        table = pa.table({"text": texts, "label": list(range(len(texts)))}, schema=schema)
        if fmt == "parquet":
            sink.write_table(table)
        else:
            sink.write_table(table, max_chunksize=1000)  # datasets' writer_batch_size
        rows += len(texts)
        size += sum(map(len, texts))
    sink.close()
    if fmt == "arrow":
        stream.close()
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["parquet", "arrow"])
def test_streaming_a_large_file_keeps_memory_flat(tmp_path, fmt):
    path = tmp_path / ("big.parquet" if fmt == "parquet" else "big_dataset")
    rows = _write(path, fmt)
    files = [path] if fmt == "parquet" else list(path.glob("*.arrow"))
    file_bytes = sum(f.stat().st_size for f in files)
    assert file_bytes > 0.9 * FILE_MB * 1_000_000
    out = subprocess.run([sys.executable, "-c", MEASURE, str(path), str(rows)],
                         capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)
    mb = {k: result[k] / 1e6 for k in ("base", "quarter", "end")}
    print(f"{fmt}: {file_bytes / 1e6:.0f} MB, {rows:,} rows; peak RSS {mb['base']:.0f} MB "
          f"after imports, {mb['quarter']:.0f} MB after a quarter of the documents, "
          f"{mb['end']:.0f} MB at the end (+{mb['end'] - mb['base']:.1f} MB)")
    assert result["documents"] == rows
    # Far below the file (a few batches and the allocator's pools, not the file) ...
    assert result["end"] - result["base"] < 0.25 * file_bytes
    # ... and flat: the last three quarters of the file add (almost) nothing.
    assert result["end"] - result["quarter"] < 0.03 * file_bytes
