"""File one GPU loan's output under docs/results/gpu/: `make gpu-check` leaves its table,
profile and micro-benchmarks in OUT (runs/gpu-check); this copies them, unchanged, into
docs/results/gpu/DATE-CARD/ (the date and card from the table itself), so each loan's
figures are committed beside the earlier ones and the README's GPU rows can name the newest.

    python benchmarks/gpu_record.py [OUT] [--results docs/results/gpu]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# What a loan writes that is worth keeping: the table, the profile, the micro-benchmarks and
# the compressed one-step traces.
KEPT = ("gpu_check.md", "gpu_check.json", "profile.md", "profile.json", "micro.md",
        "micro.json", "trace-*.json.gz")


def card_slug(device: str) -> str:
    """"NVIDIA H200 (...)" -> "nvidia-h200": the folder name's card part."""
    name = device.split("(")[0].strip().lower()
    return re.sub(r"[^a-z0-9]+", "-", name).strip("-") or "device"


def record(out: Path, results: Path) -> Path:
    """Copy OUT's kept files into results/DATE-CARD[-N]/ (a new folder: never overwrite an
    earlier loan); the folder written."""
    table = out / "gpu_check.json"
    if not table.is_file():
        raise SystemExit(f"{out}: no gpu_check.json there; run `make gpu-check` first")
    head = json.loads(table.read_text())
    if head.get("dry_run"):
        raise SystemExit(f"{table}: a dry run (CPU); only a GPU loan's figures are filed")
    base = f"{head['date']}-{card_slug(head['device'])}"
    target, n = results / base, 1
    while target.exists():
        n += 1
        target = results / f"{base}-{n}"
    target.mkdir(parents=True)
    for pattern in KEPT:
        for path in sorted(out.glob(pattern)):
            shutil.copy2(path, target / path.name)
    return target


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", nargs="?", default="runs/gpu-check",
                        help="the check's output folder (default: %(default)s)")
    parser.add_argument("--results", default=str(ROOT / "docs" / "results" / "gpu"),
                        help="where loans are filed (default: docs/results/gpu)")
    args = parser.parse_args()
    print(f"filed in {record(Path(args.out), Path(args.results))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
