"""`litebert pretrain`, `eval-pretraining`, `recipes`, `export`, `plot` and `demo`.
Each command imports what it runs inside it: a command line builds only its own group's
parser (litebert.cli), and `--help` loads no torch.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from litebert.cpus import usable_cpus
from litebert.family_names import named_families
from litebert.options import add_options, flags, given


def cmd_pretrain(args: argparse.Namespace) -> None:
    from litebert.distributed import rank_and_world, shutdown
    from litebert.provenance import FLAG, SET, Source
    from litebert.train.preemption import Preempted, interrupted
    from litebert.train.pretrain import RunComplete, pretrain
    from litebert.train.run_config import PretrainConfig, load_run_config, parse_override
    from litebert.write_errors import WriteFailed

    overrides = given(args, PretrainConfig)
    flag = flags(PretrainConfig)
    sources = {name: Source(FLAG, flag[name], name) for name in overrides}
    if args.objective is not None:  # the class changes; the recipe's fields stay
        overrides["objective"] = args.objective
        sources["objective"] = Source(FLAG, "--objective", "objective.name")
    for key, value in map(parse_override, args.set):
        overrides[key], sources[key] = value, Source(SET, key=key)
    cfg = load_run_config(args.config, overrides, sources)
    main_rank = os.environ.get("RANK", "0") == "0"
    try:
        result = pretrain(cfg)
    except Preempted as stop:  # saved: every rank leaves with the status a scheduler reads
        if main_rank:
            print(f"litebert pretrain: {stop}", file=sys.stderr)
        shutdown(stop.status)
        raise SystemExit(stop.status) from None
    except KeyboardInterrupt:  # Ctrl-C outside the loop's watch: start-up, the export
        cut = interrupted(cfg.out)
        if main_rank:  # no barrier: another rank may be anywhere
            print(f"litebert pretrain: {cut}", file=sys.stderr)
        raise SystemExit(cut.status) from None
    except RunComplete as done:  # the same command again: nothing to do, and nothing done
        result = {}
        if main_rank:
            print(f"litebert pretrain: {done}")
    except WriteFailed as failed:
        if not (failed.agreed and rank_and_world()[1] > 1):
            raise
        # Every rank raised it at one collective; they meet before leaving, since torchrun
        # ends the others once one exits, perhaps before they have said why.
        print(f"litebert pretrain: error: {failed}", file=sys.stderr, flush=True)
        shutdown(2)
        raise SystemExit(2) from None
    if result and main_rank:
        print(json.dumps(result, indent=2))
    # On success only: after an error another rank may wait in a collective, and the
    # barrier in shutdown would hang. Under torchrun this call ends the process.
    shutdown()


def cmd_eval_pretraining(args: argparse.Namespace) -> None:
    from litebert.files import atomic_write
    from litebert.objectives import evaluate_directory

    objective, result = evaluate_directory(args.model, args.data, generator=args.generator,
                                           instances=args.instances, seed=args.seed,
                                           batch_size=args.batch_size)
    print(objective.format_result(result))
    if args.out:  # RESULT_KEYS (then RTD_KEYS) order, not sorted: the table's order
        path = atomic_write(args.out, json.dumps(result, indent=2) + "\n")
        print(f"wrote {path}")


def cmd_recipes(args: argparse.Namespace) -> None:
    from litebert.train.run_config import RECIPE_DIR, recipe_names, recipe_summary

    names = recipe_names()
    width = max(map(len, names))
    for name in names:
        print(f"{name:<{width}} {recipe_summary(name)}")
    print(f"\nfiles: {RECIPE_DIR}; use one with `litebert pretrain --config NAME`")


def cmd_export(args: argparse.Namespace) -> None:
    from litebert.train.pretrain import export_run

    print(f"wrote {export_run(args.run_dir, args.out, unroll=args.unroll)}")


def cmd_plot(args: argparse.Namespace) -> None:
    from litebert.train.plots import plot_run

    for path in plot_run(Path(args.run_dir)):
        print(f"wrote {path}")


def cmd_demo(args: argparse.Namespace) -> None:
    from litebert.demo import run_demo

    run_demo(Path(args.work), max_steps=args.max_steps, workers=args.workers,
             objective=args.objective, model=args.model)


def _add_pretrain(sub) -> None:
    from litebert.objectives import describe_fields
    from litebert.train.run_config import PretrainConfig

    p = sub.add_parser("pretrain", help="pre-train: MLM (+ SOP/NSP), ELECTRA's replaced-token "
                            "detection or XLNet's permutation LM (torchrun-aware)",
                       description="Each field comes from the recipe (--config), else from "
                                   "the default shown; options and --set override both.")
    p.add_argument("--config", metavar="RECIPE",
                   help="a built-in recipe (e.g. tiny-cpu; `litebert recipes` lists them) or "
                        "a YAML file (default: none, the defaults below)")
    add_options(p, PretrainConfig)
    p.add_argument("--objective", metavar="NAME",
                   help="the objective: mlm, electra, plm or package.module:Class; the recipe's "
                        "objective fields stay (default: the recipe's, else mlm)")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="any field, the value read as YAML and quoted for the shell, e.g. "
                        "--set 'model_overrides={sharing: attention}' or --set "
                        "objective.temperature=4; --set 'phases=[{steps: N}, {steps: N, "
                        "data: DIR, FIELD: VALUE}]' runs the run in phases, and --set "
                        "phases.N.FIELD=VALUE sets one field of phase N, e.g. --set "
                        "phases.2.data=DIR for a recipe's second phase (default: none)")
    p.epilog = describe_fields()
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.set_defaults(func=cmd_pretrain)


def add_train_commands(sub) -> None:
    from litebert.demo_plans import PLANS, model_help

    _add_pretrain(sub)
    _add_eval_pretraining(sub)
    p = sub.add_parser("recipes", help="the built-in pre-training recipes, for --config")
    p.set_defaults(func=cmd_recipes)
    p = sub.add_parser("export", help="newest checkpoint of a run -> transformers directory")
    p.add_argument("run_dir", metavar="RUN_DIR",
                   help="a run directory of `litebert pretrain` (its --out)")
    p.add_argument("--out", help="the directory to write (default: RUN_DIR/export)")
    p.add_argument("--unroll", action="store_true",
                   help="write shared layers as one copy per layer, so a model whose family "
                        "has no sharing (ELECTRA, BERT) is saved in that family's layout, not "
                        "ALBERT's (default: off)")
    p.set_defaults(func=cmd_export)
    p = sub.add_parser("plot", help="PNG curves of a run under RUN_DIR/plots")
    p.add_argument("run_dir", metavar="RUN_DIR",
                   help="a run directory of `litebert pretrain` (its --out), with its "
                        "metrics.jsonl")
    p.set_defaults(func=cmd_plot)
    p = sub.add_parser("demo", help="fetch bbc-news, train a tokenizer, build data, pre-train "
                                    "the tiny preset, evaluate, export, plot")
    p.add_argument("--work", default="runs/demo",
                   help="directory of every stage's output, reused (default: %(default)s)")
    p.add_argument("--max-steps", type=int,
                   help="pre-training steps (default: the objective's recipe's)")
    p.add_argument("--workers", type=int, default=usable_cpus(), metavar="N",
                   help="tokenizer processes (default: the CPUs this process may use, %(default)s "
                        "here)")
    p.add_argument("--objective", default="mlm", choices=("mlm", "electra", "plm"),
                   help="mlm = ALBERT (MLM + SOP, the tiny-cpu recipe); electra = ELECTRA's "
                        "replaced-token detection (the electra-tiny-cpu recipe), in "
                        "WORK/run-electra beside ALBERT's run, sharing its data; plm = "
                        "XLNet's permutation LM with memories (the xlnet-tiny-cpu recipe), "
                        "in WORK/run-plm with its own XLNet tokenizer and streams "
                        "(default: %(default)s)")
    p.add_argument("--model", choices=[plan.model for plan in PLANS.values()],
                   help=f"the preset to pre-train with its demo plan, one per family: "
                        f"{model_help()}; each with its own recipe (a *-cpu one), "
                        f"tokenizer and data (default: the objective's: tiny, electra-small "
                        f"or xlnet-tiny)")
    p.set_defaults(func=cmd_demo)


def _add_eval_pretraining(sub) -> None:
    p = sub.add_parser(
        "eval-pretraining", help="MLM, SOP and NSP accuracy of a pre-trained model on "
                                 "held-out documents (the paper's Table 5); RTD metrics of "
                                 "an ELECTRA discriminator; PLM accuracy of an XLNet LM",
        description="Scores MODEL on the held-out documents of --data: MLM at masked "
                    "tokens, and SOP and NSP pairs built from the same documents whatever "
                    "objective the data was built with, all drawn once from --seed so every "
                    "model sees the same examples; each with its baseline. An ELECTRA "
                    "discriminator (no MLM head) is scored on replaced-token detection "
                    "instead (rtd_* keys), its input corrupted by --generator, with "
                    "training's own evaluation on the data's held-out instances: a run's "
                    "--seed, eval_instances and micro_batch_size reproduce its last "
                    "eval_rtd_* figures. A permutation-LM model (XLNet's LM head) is "
                    "scored on the data's held-out windows with the objective fields its "
                    "run recorded (plm_* keys). Runs on CUDA when there is one.")
    p.add_argument("model", metavar="MODEL",
                   help=f"a model directory of any family litebert reads "
                        f"({named_families()}): a checkpoint without a pair head gets MLM "
                        f"only; an ELECTRA discriminator gets RTD; an XLNet LM gets PLM")
    p.add_argument("--data", required=True, metavar="DIR",
                   help="a data directory from `litebert data build`, made with the model's "
                        "tokenizer (required)")
    p.add_argument("--generator", metavar="DIR",
                   help="ELECTRA discriminators only: the generator that corrupts their input "
                        "(default: the discriminator directory's sibling ../generator, as "
                        "`litebert export` writes it, when it exists)")
    p.add_argument("--out", metavar="FILE.json",
                   help="also write the result as JSON here (default: none, stdout only)")
    p.add_argument("--instances", type=int, default=2000, metavar="N",
                   help="SOP pairs and NSP pairs, at most, each, whole documents; for a "
                        "discriminator, held-out instances (a run's eval_instances) "
                        "(default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="seed of the documents, pairs and masks; for a discriminator, of the "
                        "held-out instances and the corruption (a run's seed) "
                        "(default: %(default)s)")
    p.add_argument("--batch-size", type=int, default=32, metavar="B",
                   help="sequences per forward pass; for a discriminator, a run's "
                        "micro_batch_size (the same batches, the same sums) "
                        "(default: %(default)s)")
    p.set_defaults(func=cmd_eval_pretraining)
