"""`litebert <command>`: parse the arguments, build the parts, run. Nothing else lives here."""

from __future__ import annotations

import argparse
import logging
import sys

from litebert.config import PRESETS, ConfigError


def cmd_params(args: argparse.Namespace) -> None:
    from litebert.model.counts import ablation_rows, preset_rows

    header = (f"{'model':<36} {'L':>3} {'H':>5} {'E':>5} {'heads':>5} {'FFN':>6} "
              f"{'sharing':>9} {'backbone':>14} {'+MLM & SOP':>14} {'paper':>6}")
    for title, rows in (("Presets", preset_rows(PRESETS)),
                        ("Paper ablation (ALBERT-base, Tables 3 and 4)", ablation_rows())):
        print(f"\n{title}\n{header}\n{'-' * len(header)}")
        for r in rows:
            c = r.config
            print(f"{r.name:<36} {c.num_hidden_layers:>3} {c.hidden_size:>5} "
                  f"{c.embedding_size:>5} {c.num_attention_heads:>5} {c.intermediate_size:>6} "
                  f"{c.sharing:>9} {r.backbone:>14,} {r.with_heads:>14,} {r.paper:>6}")


def cmd_smoke(args: argparse.Namespace) -> None:
    from litebert.smoke import smoke

    smoke(args.preset, batch=args.batch, seq=args.seq, steps=args.steps)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="litebert", description="ALBERT toolkit")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("params", help="parameter counts of every preset and the paper's ablation")
    p.set_defaults(func=cmd_params)
    p = sub.add_parser("smoke", help="forward/backward/save/load of a preset on random data")
    p.add_argument("--preset", default="tiny", choices=list(PRESETS))
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--steps", type=int, default=3)
    p.set_defaults(func=cmd_smoke)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(message)s")
    try:
        args.func(args)
    except (ConfigError, ValueError, FileNotFoundError) as err:
        print(f"litebert {args.command}: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
