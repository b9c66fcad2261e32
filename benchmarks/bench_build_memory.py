"""Where a `litebert data build`'s memory goes: each process's resident memory split into
anonymous pages (its own heap) and file-backed pages (mapped files and libraries), sampled
every 0.1 s from /proc/PID/status (RssAnon, RssFile), at the moment the whole tree peaks.

bench_data.py gives the peak of all processes; this says which process and which kind of
page made it, which is how the corpus-size growth of the build was found (docs/speed.md).
Corpora and tokenizer come from bench_data.py (its --work folder).

    python benchmarks/bench_build_memory.py CORPUS [CORPUS ...] --tokenizer DIR
        [--workers 2] [--format bert]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FIELDS = ("VmRSS", "RssAnon", "RssFile")


def status_mb(pid: int) -> dict[str, float]:
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in FIELDS:
            values[key] = int(rest.split()[0]) / 1024
    return values


def tree(pid: int) -> dict[int, dict[str, float]]:
    """Every process of the tree under `pid` (itself included) -> its FIELDS, in MB."""
    found, stack = {}, [pid]
    while stack:
        p = stack.pop()
        try:
            found[p] = status_mb(p)
            stack += [int(c) for c in Path(f"/proc/{p}/task/{p}/children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return found


def measure(corpus: Path, tokenizer: Path, workers: int, fmt: str) -> dict:
    out = Path(tempfile.mkdtemp(prefix="bench-build-memory-"))
    cmd = [sys.executable, "-m", "litebert.cli", "data", "build", str(corpus), "--tokenizer",
           str(tokenizer), "--out", str(out / "data"), "--workers", str(workers),
           "--format", fmt, "--max-seq-length", "512"]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak: dict = {"total": 0.0}
    main = 0.0
    while proc.poll() is None:
        processes = tree(proc.pid)
        total = sum(p.get("VmRSS", 0.0) for p in processes.values())
        if total > peak["total"]:
            peak = {"total": total, "at": time.perf_counter() - start,
                    "anon": sum(p.get("RssAnon", 0.0) for p in processes.values()),
                    "file": sum(p.get("RssFile", 0.0) for p in processes.values())}
        main = max(main, processes.get(proc.pid, {}).get("VmRSS", 0.0))
        time.sleep(0.1)
    seconds = time.perf_counter() - start
    shutil.rmtree(out, ignore_errors=True)
    if proc.returncode:
        raise SystemExit(f"build failed: {proc.stderr.read().decode()[-2000:]}")
    return {"seconds": seconds, "main": main, **peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpora", nargs="+", type=Path, help="corpus files, one build each")
    parser.add_argument("--tokenizer", type=Path, required=True,
                        help="the tokenizer directory (bench_data.py's WORK/tokenizer)")
    parser.add_argument("--workers", type=int, default=2, help="(default: %(default)s)")
    parser.add_argument("--format", default="bert", help="(default: %(default)s)")
    args = parser.parse_args()
    print("| corpus | MB | workers | seconds | all processes, peak MB | anonymous / file-backed "
          "MB | at s | main process, peak MB |\n|---|---|---|---|---|---|---|---|")
    for corpus in args.corpora:
        r = measure(corpus, args.tokenizer, args.workers, args.format)
        mb = corpus.stat().st_size / 1e6
        print(f"| {corpus.name} | {mb:,.0f} | {args.workers} | {r['seconds']:.1f} | "
              f"{r['total']:.0f} | {r['anon']:.0f} / {r['file']:.0f} | {r['at']:.1f} | "
              f"{r['main']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
