#!/usr/bin/env bash
# The longer runs of the demo's recipe behind README "The demo": tiny-cpu on bbc-news, length
# 128, SOP pairs drawn anew each epoch (--pairs dynamic), seed 1234 (data seed 1).
#
# 1. ./run.sh cpu  -> metrics.jsonl, sop_accuracy.png, mlm_accuracy.png: 3,000 steps on this
#    project's 2-core CPU machine, single-threaded (0.7 step/s; the run was stopped at step
#    1,864 by the end of one working session and resumed to 3,000 with --resume auto the next,
#    which continues exactly). 2% of documents held out: 184 SOP pairs.
# 2. ./run.sh h100 -> h100-10k/: the same recipe for 10,000 steps (the schedule stretched to it)
#    on one H100 (fp32, 3 data-loader workers; 3.6 minutes, 46 steps/s), 10% of documents held
#    out (1,090 SOP pairs, for a tighter error bar), eval on up to 4,000 instances.
set -euo pipefail
L=litebert
where=${1:-cpu}
W=${2:-runs/demo-sop}
held=0.02; steps=3000; extra=(--eval-every 250 --save-every 250 --eval-instances 1000)
if [ "$where" = h100 ]; then
  held=0.1; steps=10000
  extra=(--eval-every 500 --save-every 5000 --eval-instances 4000 --precision fp32 --num-workers 3)
fi
mkdir -p "$W"
$L corpus fetch bbc-news --out "$W/corpus"
$L tokenizer train "$W/corpus/bbc-news.jsonl" --vocab-size 10000 --out "$W/tok"
$L data build "$W/corpus/bbc-news.jsonl" --tokenizer "$W/tok" --out "$W/data-$held" \
   --max-seq-length 128 --objective sop --pairs dynamic --heldout-fraction $held --seed 1 --workers 2
$L pretrain --config tiny-cpu --data "$W/data-$held" --out "$W/run-$where" --max-steps $steps \
   --warmup-steps 60 "${extra[@]}" --resume auto
$L plot "$W/run-$where"
