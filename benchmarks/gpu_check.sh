#!/usr/bin/env bash
# `make gpu-check` on a GPU host: benchmarks/gpu_check.py under the host's own Python (the one
# with a CUDA build of torch: $LITEBERT_GPU_PYTHON, else python3), litebert from src/, and the
# wheels that `make gpu-check-data` put in DATA/wheels for what that Python may lack
# (tensorboardX, a sentencepiece with offsets), installed into a folder of their own, no
# network. Arguments go to gpu_check.py; --data defaults to gpu-check-data.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${LITEBERT_GPU_PYTHON:-python3}
data=gpu-check-data
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    if [[ ${args[i]} == --data ]]; then data=${args[i + 1]}; fi
done
if [[ ! " ${args[*]} " == *" --data "* ]]; then args+=(--data "$data"); fi
site=${TMPDIR:-/tmp}/litebert-gpu-check-site
if compgen -G "$data/wheels/*.whl" > /dev/null; then
    "$python" -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$site" \
        "$data"/wheels/*.whl
fi
export PYTHONPATH="$PWD/src:$site${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
exec "$python" benchmarks/gpu_check.py "${args[@]}"
