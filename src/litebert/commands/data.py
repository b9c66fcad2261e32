"""`litebert data build`, `merge`, `inspect`, `stats` and `verify`.
Each command imports what it runs inside it: a command line builds only its own group's
parser (litebert.cli), and `--help` loads no torch.
"""

from __future__ import annotations

import argparse
import json

from litebert.cpus import usable_cpus
from litebert.options import add_options, given


def cmd_data_build(args: argparse.Namespace) -> None:
    from litebert.data.builder import BuildConfig, build

    cfg = BuildConfig(**given(args, BuildConfig))
    manifest = build(args.inputs, args.tokenizer, args.out, cfg, workers=args.workers,
                     force=args.force, shard=args.shard, add_tokens=args.add_tokens)
    shown = ("config_hash", "shard", "counts", "splits", "seconds")
    print(json.dumps({k: manifest[k] for k in shown if k in manifest}, indent=2))
    print(manifest.get("corpus_summary", ""))


def cmd_data_merge(args: argparse.Namespace) -> None:
    from litebert.data.merge import merge

    manifest = merge(args.parts, args.out, workers=args.workers, force=args.force)
    print(json.dumps({k: manifest[k] for k in ("config_hash", "counts", "splits", "seconds")},
                     indent=2))
    print(manifest.get("corpus_summary", ""))


def cmd_data_inspect(args: argparse.Namespace) -> None:
    from litebert.data.manifest import open_data
    from litebert.objectives import reporter_for

    data = open_data(args.dir)  # the manifest, read once for the whole command
    for block in reporter_for(data).inspect(data, args.split, args.n):
        print(block + "\n")


def cmd_data_stats(args: argparse.Namespace) -> None:
    from litebert.data.manifest import open_data
    from litebert.objectives import reporter_for

    data = open_data(args.dir)  # the manifest, read once for the whole command
    print(json.dumps(reporter_for(data).stats(data, sample=args.sample), indent=2))


def cmd_data_verify(args: argparse.Namespace) -> None:
    from litebert.data.integrity import verify_data

    result = verify_data(args.dir)
    print(f"{result['directory']}: {result['files']} files, {result['bytes']:,} bytes, "
          "all as the manifest records")


def add_data_commands(sub) -> None:
    from litebert.data.builder import BuildConfig
    from litebert.data.shard_plan import shard_option

    data = sub.add_parser("data", help="pre-training data: build, merge, inspect, stats")
    dsub = data.add_subparsers(dest="data_command", required=True)
    p = dsub.add_parser("build", help="corpus -> memory-mapped token shards + instances")
    p.add_argument("inputs", nargs="+",
                   help="files, directories or globs: text (.gz/.bz2/.xz too), JSON lines, "
                        "Parquet files, or folders written by datasets' save_to_disk; the "
                        "format of each is found from its bytes and name (see --format)")
    p.add_argument("--tokenizer", required=True,
                   help="a tokenizer directory: spiece.model, vocab.txt or byte-level BPE "
                        "files (required)")
    p.add_argument("--out", required=True, help="the data directory to write (required)")
    p.add_argument("--add-tokens", default=None, metavar="FILE",
                   help="a text file of words, one a line, to add to the tokenizer as whole "
                        "tokens (ids from its size upward; words it has as one token are "
                        "skipped); the data directory's tokenizer/ is the extended one, with "
                        "litebert_added_tokens.json giving each new id's former pieces "
                        "(default: none)")
    add_options(p, BuildConfig)
    p.add_argument("--workers", type=int, default=usable_cpus(), metavar="N",
                   help="tokenizer processes (default: the CPUs this process may use, %(default)s "
                        "here)")
    p.add_argument("--force", action="store_true",
                   help="rebuild even when the directory holds this very build (default: off)")
    p.add_argument("--shard", type=shard_option, default=None, metavar="I/N",
                   help="build only shard I (0 to N-1) of N, a byte-balanced run of the corpus, "
                        "for `data merge` (e.g. one Slurm array task each) (default: all)")
    p.set_defaults(func=cmd_data_build)
    p = dsub.add_parser("merge", help="shard directories of `data build --shard I/N` -> one "
                                      "data directory (as a single build writes it)")
    p.add_argument("parts", nargs="+", metavar="PARTS",
                   help="the shard directories, or one directory holding them")
    p.add_argument("--out", required=True, help="the data directory to write (required)")
    p.add_argument("--workers", type=int, default=usable_cpus(), metavar="N",
                   help="processes of pass 2 (default: the CPUs this process may use, "
                        "%(default)s here)")
    p.add_argument("--force", action="store_true",
                   help="merge again even when --out holds this very build (default: off)")
    p.set_defaults(func=cmd_data_merge)
    p = dsub.add_parser("inspect", help="decoded instances with their masks (--packing "
                                        "streams: windows with their parts and targets)")
    p.add_argument("dir", help="a data directory (from `litebert data build`)")
    p.add_argument("-n", type=int, default=5, help="instances to show (default: %(default)s)")
    p.add_argument("--split", default="train", choices=["train", "heldout"],
                   help="which split (default: %(default)s)")
    p.set_defaults(func=cmd_data_inspect)
    p = dsub.add_parser("stats", help="counts and masking statistics as JSON")
    p.add_argument("dir", help="a data directory (from `litebert data build`)")
    p.add_argument("--sample", type=int, default=2000,
                   help="instances sampled for the masking statistics (--packing streams: "
                        "windows sampled for the target and pair statistics) "
                        "(default: %(default)s)")
    p.set_defaults(func=cmd_data_stats)
    p = dsub.add_parser("verify", help="read every file of a data directory and compare its "
                                       "sha256 with the manifest (sizes are checked on every open)")
    p.add_argument("dir", help="a data directory (from `litebert data build`)")
    p.set_defaults(func=cmd_data_verify)
