#!/usr/bin/env bash
# The small ELECTRA runs behind README "ELECTRA / What the small runs showed". Data: the demo's
# (`litebert demo` builds it in runs/demo/data: bbc-news, length 128, dynamic SOP pairs, 2% of
# documents held out, data seed 1); seed 1234. Each metrics file here is the run's metrics.jsonl.
# Runs 1-5 ran with electra-tiny-cpu as it was before its temperature became 4, i.e. 1.
set -euo pipefail
D=${1:-runs/demo/data}; L=litebert
T1="--config electra-tiny-cpu --data $D --temperature 1"
$L pretrain $T1 --out runs/e-t1 --max-steps 600                            # t1-600 (2 CPU cores)
$L pretrain $T1 --out runs/e-lr2e-4 --lr 0.0002 --warmup-steps 100 --max-steps 600 \
   --eval-every 150 --no-export                                            # t1-lr2e-4-600
$L pretrain --config electra-tiny-cpu --data $D --out runs/e-t2 --temperature 2 \
   --eval-every 150 --eval-instances 500 --no-export                      # t2-450: stopped at 450
$L pretrain --config electra-tiny-cpu --data $D --out runs/e-t4 --temperature 4 \
   --eval-every 150 --eval-instances 500 --no-export                      # t4-450: stopped at 450
# h100-t1-6000: one H100, bf16, data built with --heldout-fraction 0.1:
#   litebert pretrain $T1 --out runs/e-h100 --max-steps 6000 --warmup-steps 100 --eval-every 500 \
#      --save-every 3000 --eval-instances 2000 --precision bf16 --num-workers 3 --no-export
# Diagnostics (diagnose.py, run from the data's parent directory with the data at
# ./data-dynamic): the generator's samples replaced by uniform draws over the vocabulary
# (diag-uniform-150) or by draws from the corpus's unigram distribution (diag-unigram-150);
# `detach` keeps the generator's gradient out of the shared embeddings.
