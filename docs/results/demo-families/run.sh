#!/bin/sh
# `litebert demo --model bert-tiny` and `--model roberta-tiny` on this project's 2-core CPU
# machine (fp32), 2026-11-29, one after the other in one work directory, while other test
# processes ran beside them (the minutes are not those of an idle machine): bbc-news; BERT on
# the ALBERT-layout SentencePiece of 10,000 pieces with NSP pairs drawn anew each epoch,
# RoBERTa on a byte-level BPE with full sentences; 600 steps of 32 x 128 each (seed 1234),
# then the topics fine-tuning (300 steps, seed 42). bert/ and roberta/ hold each
# pre-training run's metrics.jsonl and plots and the demo's summary.json.
litebert demo --model bert-tiny --work runs/demo
litebert demo --model roberta-tiny --work runs/demo
