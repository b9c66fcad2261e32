"""What `litebert demo` pre-trains for each objective (PLANS) and the figures its summary
prints: the plans alone, without torch, so that `litebert demo --help` lists the models they
pre-train without loading what runs them (demo.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from litebert.family_names import FAMILY_TITLES
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
    family: str  # the preset's model_type (litebert.family_names.FAMILY_TITLES)
    tokenizer: str = "sentencepiece"  # the kind trained (litebert.tokenization.train_tokenizer)
    tokenizer_title: str = "SentencePiece unigram, ALBERT layout"
    # The data build (BuildConfig fields) and what it is, in words.
    data: tuple[tuple[str, object], ...] = (("objective", "sop"), ("pairs", "dynamic"))
    data_title: str = "SOP pairs of 128 tokens drawn anew each epoch, dynamic n-gram masking"
    # Added to the data directory's name when the data differs from others with this tokenizer.
    data_suffix: str = ""

    @property
    def suffix(self) -> str:  # of the tokenizer and data directories (ALBERT's have none)
        return "" if self.tokenizer == "sentencepiece" else f"-{self.tokenizer}"

    @property
    def data_dir(self) -> str:  # under the work directory
        return f"data{self.suffix}{self.data_suffix}"


PLANS = {
    "mlm": Plan(RECIPE_DIR / "tiny-cpu.yaml",
                "tiny preset (L=4, H=256, E=128), LAMB, MLM + SOP", "run", "",
                (Figure("MLM", "eval_mlm_accuracy", "eval_mlm_baseline_accuracy",
                        "most-frequent-token baseline"),
                 Figure("SOP", "eval_sop_accuracy", "eval_sop_baseline_accuracy",
                        "majority-label baseline", per_pair=True)),
                model="tiny", family="albert"),
    "electra": Plan(RECIPE_DIR / "electra-tiny-cpu.yaml",
                    "ELECTRA (L=4, H=256, E=128; generator H=64), Adam, replaced-token "
                    "detection", "run-electra", "discriminator",
                    (Figure("generator MLM", "eval_generator_mlm_accuracy",
                            "eval_generator_mlm_baseline_accuracy",
                            "most-frequent-token baseline"),
                     Figure("RTD", "eval_rtd_accuracy", "eval_rtd_baseline_accuracy",
                            "every-token-original baseline")),
                    model="electra-small", family="electra"),
    "plm": Plan(RECIPE_DIR / "xlnet-tiny-cpu.yaml",
                "XLNet (L=4, H=256), Adam, permutation LM with memories", "run-plm", "",
                (Figure("PLM", "eval_plm_accuracy", "eval_plm_baseline_accuracy",
                        "most-frequent-token baseline"),),
                model="xlnet-tiny", family="xlnet", tokenizer="xlnet",
                tokenizer_title="SentencePiece unigram, XLNet layout",
                data=(("objective", "none"), ("packing", "streams")),
                data_title="XLNet's streams: windows of 128 (64 reused), targets and "
                           "factorisation orders drawn anew each epoch"),
    "modernbert": Plan(RECIPE_DIR / "modernbert-tiny-cpu.yaml",
                       "ModernBERT (L=4, H=256, GeGLU, RoPE, global + 64-token sliding "
                       "window), AdamW, warm-up-stable-decay, MLM alone", "run-modernbert", "",
                       (Figure("MLM", "eval_mlm_accuracy", "eval_mlm_baseline_accuracy",
                               "most-frequent-token baseline"),),
                       model="modernbert-tiny", family="modernbert", tokenizer="modernbert",
                       tokenizer_title="byte-level BPE, ModernBERT's [CLS]/[SEP] template",
                       data=(("objective", "none"), ("packing", "full-sentences"),
                             ("masked_lm_prob", 0.3)),
                       data_title="full sentences packed to 128 tokens, 30% masked anew "
                                  "each epoch"),
    # BERT's vocabulary is WordPiece, which litebert reads but does not train: the ALBERT
    # layout's SentencePiece stands in (as in the bert-base recipe), [CLS] A [SEP] B [SEP].
    "bert": Plan(RECIPE_DIR / "bert-tiny-cpu.yaml",
                 "BERT (L=4, H=256, E=H, no sharing), AdamW, MLM + NSP", "run-bert", "",
                 (Figure("MLM", "eval_mlm_accuracy", "eval_mlm_baseline_accuracy",
                         "most-frequent-token baseline"),
                  Figure("NSP", "eval_nsp_accuracy", "eval_nsp_baseline_accuracy",
                         "majority-label baseline", per_pair=True)),
                 model="bert-tiny", family="bert",
                 data=(("objective", "nsp"), ("pairs", "dynamic"), ("max_ngram", 1)),
                 data_title="NSP pairs of 128 tokens drawn anew each epoch, whole-word "
                            "masking of single words",
                 data_suffix="-nsp"),
    "roberta": Plan(RECIPE_DIR / "roberta-tiny-cpu.yaml",
                    "RoBERTa (L=4, H=256, one token type), Adam beta2 0.98, MLM alone",
                    "run-roberta", "",
                    (Figure("MLM", "eval_mlm_accuracy", "eval_mlm_baseline_accuracy",
                            "most-frequent-token baseline"),),
                    model="roberta-tiny", family="roberta", tokenizer="bpe",
                    tokenizer_title="byte-level BPE, RoBERTa's <s>/</s> layout",
                    data=(("objective", "none"), ("packing", "full-sentences")),
                    data_title="full sentences packed to 128 tokens, 15% masked anew each "
                               "epoch"),
}


def model_help() -> str:
    """Each `--model` value with the family it pre-trains: 'tiny (ALBERT), ...'."""
    return ", ".join(f"{plan.model} ({FAMILY_TITLES[plan.family]})" for plan in PLANS.values())


def plan_name(objective: str = "mlm", model: str | None = None) -> str:
    """The PLANS entry for `--objective` and `--model` (None: the objective's own plan)."""
    if model is None:
        return objective
    names = [name for name, plan in PLANS.items() if plan.model == model]
    if not names:
        raise ValueError(f"demo --model {model}: choose from "
                         f"{', '.join(plan.model for plan in PLANS.values())}")
    return names[0]
