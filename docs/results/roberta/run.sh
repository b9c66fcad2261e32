#!/usr/bin/env bash
# The RoBERTa runs behind README "RoBERTa": bbc-news, a byte-level BPE of 8,000 ids trained on
# it, data of length 128 in the three packing modes (padding_fraction of each from
# `litebert data stats`), then the roberta-tiny-cpu recipe on doc-sentences, evaluated and
# exported; check_export.py loads the export in transformers and compares outputs.
# Run from the repository root on 2 CPU cores; W is the work directory.
set -euo pipefail
W=${1:-runs/roberta}; L=litebert
$L corpus fetch bbc-news --out $W/corpus
$L tokenizer train $W/corpus/bbc-news.jsonl --kind bpe --vocab-size 8000 --out $W/tok
for P in pairs full-sentences doc-sentences; do
  $L data build $W/corpus/bbc-news.jsonl --tokenizer $W/tok --out $W/data-$P \
     --max-seq-length 128 --objective none --packing $P --heldout-fraction 0.02 --seed 1
  $L data stats $W/data-$P > $W/stats-$P.txt
done
$L pretrain --config roberta-tiny-cpu --data $W/data-doc-sentences --out $W/run
$L eval-pretraining $W/run/export --data $W/data-doc-sentences --out $W/eval.json
python docs/results/roberta/check_export.py $W/run/export
