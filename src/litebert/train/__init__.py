"""Pre-training: the objective-agnostic loop and what it is built from.

- `pretrain.py`: the Trainer (accumulation over the global batch, clipping, eval, export); what
  it trains, evaluates and exports is the objective's (litebert.objectives)
- `run_config.py`: PretrainConfig and the recipes it is read from
- `optimizers.py` (the registry: one entry per optimizer; `lamb.py`, `adamw.py` and
  `param_groups.py` build the built-ins), `schedule.py` (warm-up and decay)
- `checkpoint.py`: the checkpoint format, atomic writes, file records, FSDP shards (DCP)
- `state.py`: what goes into and comes out of a checkpoint; export to a model directory
- `metrics.py` (metrics.jsonl, TensorBoard), `plots.py`; torchrun, DDP and FSDP are
  litebert.distributed, evaluation is each objective's (litebert.objectives)
"""
