#!/usr/bin/env bash
# The demo's fine-tuning stage (src/litebert/demo.py: _finetune_topics) with five seeds instead
# of one, on the model `make demo` exported. Run from the repository root after `make demo`.
# About 10 minutes on 2 CPU cores; results.json here is its output (per-seed configs dropped).
set -euo pipefail
WORK=${WORK:-runs/demo}
.venv/bin/litebert finetune --task classification --data "$WORK/corpus/bbc-news.jsonl" \
    --model "$WORK/run/export" --out "${OUT:-runs/demo-topics-seeds}" \
    --text-a text --label-column label --lr 5e-4 --batch-size 16 --max-steps 300 \
    --warmup-steps 30 --max-seq-length 128 --eval-every 100 --dropout 0.0 --seed 42 --seeds 5
