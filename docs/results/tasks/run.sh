#!/usr/bin/env bash
# The real-data runs of the fine-tuning tasks (docs/results/tasks/README.md): a real
# pre-trained checkpoint from a registry package (all-MiniLM-L6-v2) fine-tuned and scored on
# real data from registry packages. Run from the repository root with the venv's litebert:
#   bash docs/results/tasks/run.sh WORKDIR
# Copies each run's results.json here as <run>.json. Budgets are a CPU session's (2 cores),
# written below; nothing was tuned on these data.
set -euo pipefail
work=${1:?usage: run.sh WORKDIR}
here=$(cd "$(dirname "$0")" && pwd)
litebert=${LITEBERT:-litebert}
python=${PYTHON:-python}
mkdir -p "$work" && cd "$work"
stamp() { echo "[$(date -u +%H:%M:%S)] $*"; }

$litebert model fetch all-minilm-l6-v2 --out models
for name in conll2003 stsb hellaswag boolq-retrieval; do
    $litebert task-data fetch "$name" --out data
done
model=models/all-minilm-l6-v2

# Named entities: CoNLL-2003, BERT's recipe (lr 5e-5, batch 32, 3 epochs: 1,317 steps),
# evaluated on dev after each epoch.
stamp ner
$litebert finetune --task ner --data data/conll2003 --model $model --out runs/ner \
    --eval-every 439
cp runs/ner/results.json "$here/ner.json"
$python - runs/ner/predictions/test.conll > "$here/ner-test.json" <<'PY'
import json, sys
from litebert.tasks.entities import score_entities
gold, predicted, g, p = [], [], [], []
for line in open(sys.argv[1], encoding="utf-8"):
    if line.strip():
        word, tag, guess = line.split()
        g.append(tag); p.append(guess)
    elif g:
        gold.append(g); predicted.append(p); g, p = [], []
if g:
    gold.append(g); predicted.append(p)
s = score_entities(gold, predicted)
print(json.dumps({"precision": s.precision, "recall": s.recall, "f1": s.f1}, indent=2))
PY

# Sentence embeddings: STS-B training pairs scored 4 or more as (anchor, positive), one epoch;
# STS-B dev and test Spearman and BoolQ retrieval, before and after; 128 tokens (the runs
# recorded here were made when that was the task's default; now it is the directory's, 256).
stamp embedding
mkdir -p data/sts-pairs
$python - data/stsb/train.tsv > data/sts-pairs/train.jsonl <<'PY'
import csv, json, sys
for row in csv.DictReader(open(sys.argv[1], encoding="utf-8"), delimiter="\t",
                          quoting=csv.QUOTE_NONE):
    if float(row["score"]) >= 4.0:
        print(json.dumps({"anchor": row["sentence1"], "positive": row["sentence2"]}))
PY
pairs=$(wc -l < data/sts-pairs/train.jsonl)
steps=$(( (pairs + 31) / 32 ))
for when in before after; do
    if [ $when = after ]; then
        $litebert finetune --task embedding --data data/sts-pairs --dev data/stsb/dev.tsv \
            --model $model --out runs/embedding --max-steps $steps --eval-every $steps \
            --max-seq-length 128
        cp runs/embedding/results.json "$here/embedding.json"
        model=runs/embedding/model
    fi
    for dev in stsb/dev.tsv stsb/test.tsv boolq-retrieval; do
        name=$(echo "$dev" | tr '/.' '--')
        $litebert evaluate --task embedding --data data/sts-pairs --dev data/$dev \
            --model $model --out runs/embedding-$when-$name --max-seq-length 128
        cp runs/embedding-$when-$name/results.json "$here/embedding-$when-$name.json"
    done
done
model=models/all-minilm-l6-v2

# Multiple choice: HellaSwag (validation cut into train and dev), BERT's SWAG recipe (lr 2e-5,
# batch 16) for 150 steps, a third of an epoch.
stamp choice
$litebert finetune --task choice --data data/hellaswag --model $model --out runs/choice \
    --max-steps 150 --eval-every 150
cp runs/choice/results.json "$here/choice.json"

# Multiple choice again, one whole epoch (502 steps), evaluated at its middle and end.
stamp choice-epoch
$litebert finetune --task choice --data data/hellaswag --model $model --out runs/choice-epoch \
    --max-steps 502 --eval-every 251
cp runs/choice-epoch/results.json "$here/choice-epoch.json"
stamp done
