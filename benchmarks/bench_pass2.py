"""Pass 2 of `litebert data build` alone: instances/s of `build_splits` by layout and workers.

A corpus of the requested size is generated from real text (bbc-news sentences re-assembled
into documents of 5-40 sentences, as benchmarks/bench_data.py does) and tokenized once (pass
1, a normal `data build`). Each measurement then runs `litebert.data.splits.build_splits` on
that directory in a fresh process and times it: pairs (SOP, static pairs), full-sentences
packing, pairs with static masking at dupe factor 2, and XLNet's streams (a copy of each
split's tokens; their instances are the windows read from them). instances/s counts the
instances of both splits (every dupe copy). `--before-src` times another checkout's `src`
(e.g. the code before pass 2 ran in the workers) in the same table, interleaved with this
one. Pass 2 writes into a directory beside the built one whose pass-1 files are links to
it, so the built directory stays a cache hit. The seconds include starting the pool of
workers, whose every process imports litebert (torch among it): "of a pool start" times
one more start of such a pool in the same process, the part that does not grow with the
corpus (on a loaded machine it can be most of a small build's pass 2).

    python benchmarks/bench_pass2.py [--size-mb 200] [--workers 1 2] [--before-src DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from bench_data import generate, real_sentences

from litebert.data.builder import BuildConfig, build
from litebert.tokenization import train_sentencepiece

WORK = Path(os.environ.get("LITEBERT_DATA", Path.home() / ".cache" / "litebert")) / "bench"
PASS_ONE = ("tokens.bin", "sentences.bin", "documents.bin")
LAYOUTS = {  # name: BuildConfig fields beside max_seq_length 512
    "pairs sop": {},
    "full-sentences": {"objective": "none", "packing": "full-sentences"},
    "pairs sop, static masks x2": {"masking": "static", "dupe_factor": 2},
    "xlnet streams": {"objective": "none", "packing": "streams"},  # instances: its windows
}

# Run in a fresh process, so that the timed code is the one on its PYTHONPATH.
CHILD = """
import json, sys, time
from pathlib import Path
from litebert.data.build_config import BuildConfig
from litebert.data.pool import ordered_map
from litebert.data.splits import build_splits, split_documents
from litebert.tokenization import Tokenizer
out, fields, workers = Path(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
manifest = json.loads((out / "manifest.json").read_text())
tokenizer = Tokenizer.from_pretrained(out / "tokenizer")
cfg = BuildConfig(max_seq_length=512, format="bert", **fields)
start = time.perf_counter()
splits = build_splits(out, cfg, tokenizer, manifest["counts"]["token_dtype"], workers)
seconds = time.perf_counter() - start
start = time.perf_counter()  # what a pool costs to start: its workers import litebert
list(ordered_map(split_documents, [(10, cfg)], workers))
pool_start = time.perf_counter() - start if workers > 1 else 0.0
print(json.dumps({"seconds": seconds, "pool_start": pool_start,
                  "instances": sum(s["instances"] for s in splits.values())}))
"""


def pass_one(work: Path, size_mb: int, data: Path | None, workers: int) -> Path:
    """A data directory of a generated corpus of size_mb (built once, then a cache hit)."""
    sentences = real_sentences(work, data)
    tokenizer = work / "tokenizer"
    if not (tokenizer / "spiece.model").exists():
        text = work / "bbc-sentences.txt"
        text.write_text("\n".join(sentences), encoding="utf-8")
        train_sentencepiece([text], tokenizer, vocab_size=30000)
    corpus = work / f"corpus-{size_mb}mb.txt"
    generate(corpus, sentences, size_mb, "bert")
    out = work / f"pass2-{size_mb}mb"
    build([corpus], tokenizer, out, BuildConfig(max_seq_length=512, format="bert"),
          workers=workers)
    return out


def scratch_directory(base: Path) -> Path:
    """A directory whose pass-1 files link to `base`'s: pass 2 writes its files there, and
    `base` stays as built (a cache hit the next time)."""
    run = base.with_name(base.name + "-run")
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir()
    for name in (*PASS_ONE, "tokenizer", "manifest.json"):
        (run / name).symlink_to(base / name)
    return run


def time_pass_two(src: Path, out: Path, fields: dict, workers: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run([sys.executable, "-c", CHILD, str(out), json.dumps(fields),
                           str(workers)], env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"pass 2 failed ({src}, {fields}, {workers} workers):\n"
                         f"{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=int, default=200)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--work", type=Path, default=WORK)
    parser.add_argument("--data", type=Path, default=None,
                        help="bbc-news.jsonl, for a host with no package index")
    parser.add_argument("--before-src", type=Path, default=None,
                        help="another checkout's src/ to time beside this one (e.g. main's)")
    parser.add_argument("--layouts", nargs="+", default=list(LAYOUTS), choices=list(LAYOUTS))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    base = pass_one(args.work, args.size_mb, args.data, max(args.workers))
    tokens = json.loads((base / "manifest.json").read_text())["counts"]["tokens"]
    out = scratch_directory(base)
    sides = [("this", Path(__file__).resolve().parents[1] / "src")]
    if args.before_src:
        sides.insert(0, ("before", args.before_src.resolve()))
    print(f"pass 2 of a {args.size_mb} MB corpus ({tokens:,} tokens), length 512; "
          f"{os.cpu_count()} CPUs\n")
    print("| layout | code | workers | seconds | of a pool start, about | instances "
          "| instances/s |")
    print("|---|---|---|---|---|---|---|")
    for layout in args.layouts:
        for workers in args.workers:
            for side, src in sides:  # interleaved: drift in the machine hits both alike
                r = time_pass_two(src, out, LAYOUTS[layout], workers)
                print(f"| {layout} | {side} | {workers} | {r['seconds']:.1f} | "
                      f"{r['pool_start']:.1f} | {r['instances']:,} | "
                      f"{r['instances'] / r['seconds']:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
