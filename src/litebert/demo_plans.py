"""What `litebert demo` pre-trains for each objective (PLANS) and the figures its summary
prints: the plans alone, without torch, so that `litebert demo --help` lists the models they
pre-train without loading what runs them (demo.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from litebert.train.run_config import RECIPE_DIR


@dataclass(frozen=True)
class Figure:
    """A held-out figure the summary prints against its baseline."""

    name: str
    key: str  # in the run's final evaluation
    baseline_key: str
    baseline: str  # what the baseline is, in words
    per_pair: bool = False  # its examples are the held-out pairs (for the noise sentence)


@dataclass(frozen=True)
class Plan:
    """What the demo pre-trains for one objective."""

    recipe: Path  # package data: the demo runs from an installed wheel
    title: str  # of the pre-training stage
    run: str  # the run directory under the work directory
    finetuned: str  # the exported model that is fine-tuned, under RUN/export
    figures: tuple[Figure, ...]
    model: str  # the recipe's preset: what `--model` names
    tokenizer: str = "sentencepiece"  # the kind trained (litebert.tokenization.train_tokenizer)
    tokenizer_title: str = "SentencePiece unigram, ALBERT layout"
    # The data build (BuildConfig fields) and what it is, in words.
    data: tuple[tuple[str, object], ...] = (("objective", "sop"), ("pairs", "dynamic"))
    data_title: str = "SOP pairs of 128 tokens drawn anew each epoch, dynamic n-gram masking"

    @property
    def suffix(self) -> str:  # of the tokenizer and data directories (ALBERT's have none)
        return "" if self.tokenizer == "sentencepiece" else f"-{self.tokenizer}"


PLANS = {
    "mlm": Plan(RECIPE_DIR / "tiny-cpu.yaml",
                "tiny preset (L=4, H=256, E=128), LAMB, MLM + SOP", "run", "",
                (Figure("MLM", "eval_mlm_accuracy", "eval_mlm_baseline_accuracy",
                        "most-frequent-token baseline"),
                 Figure("SOP", "eval_sop_accuracy", "eval_sop_baseline_accuracy",
                        "majority-label baseline", per_pair=True)),
                model="tiny"),
    "electra": Plan(RECIPE_DIR / "electra-tiny-cpu.yaml",
                    "ELECTRA (L=4, H=256, E=128; generator H=64), Adam, replaced-token "
                    "detection", "run-electra", "discriminator",
                    (Figure("generator MLM", "eval_generator_mlm_accuracy",
                            "eval_generator_mlm_baseline_accuracy",
                            "most-frequent-token baseline"),
                     Figure("RTD", "eval_rtd_accuracy", "eval_rtd_baseline_accuracy",
                            "every-token-original baseline")),
                    model="electra-small"),
    "plm": Plan(RECIPE_DIR / "xlnet-tiny-cpu.yaml",
                "XLNet (L=4, H=256), Adam, permutation LM with memories", "run-plm", "",
                (Figure("PLM", "eval_plm_accuracy", "eval_plm_baseline_accuracy",
                        "most-frequent-token baseline"),),
                model="xlnet-tiny", tokenizer="xlnet",
                tokenizer_title="SentencePiece unigram, XLNet layout",
                data=(("objective", "none"), ("packing", "streams")),
                data_title="XLNet's streams: windows of 128 (64 reused), targets and "
                           "factorisation orders drawn anew each epoch"),
    "modernbert": Plan(RECIPE_DIR / "modernbert-tiny-cpu.yaml",
                       "ModernBERT (L=4, H=256, GeGLU, RoPE, global + 64-token sliding "
                       "window), AdamW, warm-up-stable-decay, MLM alone", "run-modernbert", "",
                       (Figure("MLM", "eval_mlm_accuracy", "eval_mlm_baseline_accuracy",
                               "most-frequent-token baseline"),),
                       model="modernbert-tiny", tokenizer="modernbert",
                       tokenizer_title="byte-level BPE, ModernBERT's [CLS]/[SEP] template",
                       data=(("objective", "none"), ("packing", "full-sentences"),
                             ("masked_lm_prob", 0.3)),
                       data_title="full sentences packed to 128 tokens, 30% masked anew "
                                  "each epoch"),
}


def plan_name(objective: str = "mlm", model: str | None = None) -> str:
    """The PLANS entry for `--objective` and `--model` (None: the objective's own plan)."""
    if model is None:
        return objective
    names = [name for name, plan in PLANS.items() if plan.model == model]
    if not names:
        raise ValueError(f"demo --model {model}: choose from "
                         f"{', '.join(plan.model for plan in PLANS.values())}")
    return names[0]
