"""What verifying blocks costs (litebert.data.blocks): at the end of a build, and per item read.

Builds (or takes, --data) a data directory and reports:

- build: the seconds of the records a build ends with, on a warm page cache as a build
  leaves it: the sha256 of every file alone (record_files, as before block checksums), and
  with the crc32 of every 64 KiB block made in the same read (blocks.read_blocks, then
  record_files for the rest);
- read: items per second of the training split read at random positions, three ways: the
  arrays mapped without checks; through the checks with every block new to the process
  (what the first items of a run pay); and again once every block has been verified;
- per block: the mean cost of verifying one block.

    python benchmarks/bench_blocks.py [--size-mb 100] [--items 20000] [--work DIR]
        [--data DIR]

The generated corpus is documents of random words from a fixed list, in the BERT format,
with a SentencePiece model of 8,000 pieces trained on its first 2 MB.
"""

from __future__ import annotations

import argparse
import time
import zlib
from pathlib import Path

import numpy as np

from litebert.data import blocks
from litebert.data.arrays import memmap
from litebert.data.builder import BuildConfig, build
from litebert.data.integrity import array_names, record_files
from litebert.data.loader import PretrainingDataset
from litebert.tokenization import train_sentencepiece

WORDS = ("time person year way day thing man world life hand part child eye woman place work "
         "week case point government company number group problem fact be have do say get "
         "make go know take see come think look want give use find tell ask seem feel try "
         "leave call good new first last long great little own other old right big high "
         "different small large next early young important few public bad same able").split()


def generate(path: Path, size_mb: int, seed: int = 0) -> Path:
    """Documents of 3-30 sentences of 5-25 random words until `size_mb` megabytes."""
    if path.exists() and path.stat().st_size >= size_mb * 1e6:
        return path
    rng = np.random.default_rng(seed)
    words = np.array(WORDS)
    written = 0
    with open(path, "w", encoding="utf-8") as f:
        while written < size_mb * 1_000_000:
            lines = [" ".join(words[rng.integers(0, len(words), rng.integers(5, 26))]) + "."
                     for _ in range(rng.integers(3, 31))]
            written += f.write("\n".join(lines) + "\n\n")
    return path


def built(work: Path, size_mb: int) -> Path:
    corpus = generate(work / f"corpus-{size_mb}mb.txt", size_mb)
    sample = work / "sample.txt"
    sample.write_bytes(corpus.read_bytes()[:2_000_000])
    tok = train_sentencepiece([sample], work / "tok", vocab_size=8000).parent
    out = work / f"data-{size_mb}mb"
    build([corpus], tok, out, BuildConfig(max_seq_length=512, format="bert"), workers=2)
    return out


def timed(step) -> float:
    start = time.perf_counter()
    step()
    return time.perf_counter() - start


def build_cost(directory: Path) -> dict[str, float]:
    for name in array_names(directory):  # warm the page cache, as a build leaves it
        memmap(directory / name, np.uint8).sum()
    names = [n for n in array_names(directory) if n != blocks.CHECKSUMS]
    arrays = sum((directory / n).stat().st_size for n in names)
    sha = timed(lambda: record_files(directory))
    both = timed(lambda: record_files(directory, {
        n: blocks.read_blocks(directory / n, blocks.BLOCK_BYTES)[1] for n in names}))
    return {"array_mb": arrays / 1e6, "sha256_s": sha, "both_s": both}


def read_rate(directory: Path, indices: np.ndarray, checked: bool) -> tuple[float, float, int]:
    """Items/s over `indices` from a fresh dataset, then again; and blocks verified."""
    opened = blocks.DirectoryChecks.open
    if not checked:  # the arrays as a plain map
        blocks.DirectoryChecks.open = _plain  # type: ignore[method-assign]
    try:
        dataset = PretrainingDataset(directory)
        first = timed(lambda: [dataset[int(i)] for i in indices])
        again = timed(lambda: [dataset[int(i)] for i in indices])
    finally:
        blocks.DirectoryChecks.open = opened  # type: ignore[method-assign]
    seen = int(dataset.tokens.verified.sum()) if checked else 0
    return len(indices) / first, len(indices) / again, seen


def _plain(self, name, dtype, width=1, ids=False):
    array = memmap(self.directory / name, dtype)
    return array.reshape(-1, width) if width > 1 else array


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=int, default=100)
    parser.add_argument("--items", type=int, default=20000)
    parser.add_argument("--work", type=Path, default=Path("bench-blocks"))
    parser.add_argument("--data", type=Path, default=None, help="a built data directory")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    directory = args.data or built(args.work, args.size_mb)
    cost = build_cost(directory)
    print(f"build: {cost['array_mb']:.0f} MB of arrays: sha256 of every file "
          f"{cost['sha256_s']:.2f} s, with the block crc32s {cost['both_s']:.2f} s")
    length = len(PretrainingDataset(directory))
    indices = np.random.default_rng(0).integers(0, length, args.items)
    plain, _, _ = read_rate(directory, indices, checked=False)
    cold, warm, seen = read_rate(directory, indices, checked=True)
    tokens = -(-(directory / "tokens.bin").stat().st_size // blocks.BLOCK_BYTES)
    print(f"read: {length:,} items; {args.items:,} random ones: plain {plain:,.0f}/s, "
          f"checked from cold {cold:,.0f}/s ({seen:,} of {tokens:,} token blocks verified), "
          f"checked once verified {warm:,.0f}/s")
    block = blocks.BLOCK_BYTES
    data = memmap(directory / "tokens.bin", np.uint8)[:block * 200]
    per = timed(lambda: [zlib.crc32(data[i * block:(i + 1) * block].data)
                         for i in range(len(data) // block)]) / max(len(data) // block, 1)
    print(f"per block: crc32 of {block // 1024} KiB {per * 1e6:.0f} us")


if __name__ == "__main__":
    main()
