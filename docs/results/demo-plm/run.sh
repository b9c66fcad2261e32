#!/bin/sh
# `litebert demo --objective plm` on this project's 2-core CPU machine (fp32, no other load),
# 2026-11-25: bbc-news, an XLNet-layout SentencePiece of 10,000 pieces, streams of 128-token
# windows (64 reused), the xlnet-tiny-cpu recipe (4 x 256, memory 64, K 6, 600 steps of 32,
# AdamW 1e-3), seed 1234; then the topics fine-tuning (one seed). 10.7 minutes in all.
# metrics.jsonl and the plots are the pre-training run's; summary.json is the demo's.
litebert demo --objective plm --work runs/demo
