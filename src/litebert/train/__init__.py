"""Pre-training: the objective-agnostic loop and what it is built from.

- `pretrain.py`: the Trainer (accumulation over the global batch, clipping, eval, export); what
  it trains, evaluates and exports is the objective's (litebert.objectives)
- `run_config.py`: PretrainConfig and the recipes it is read from
- `evaluation.py`: `litebert eval-pretraining` (MLM + SOP and NSP on pairs from the same
  documents, the paper's Table 5 cross evaluation), also used by the MLM objective
- `lamb.py` (LAMB and AdamW parameter groups), `schedule.py` (warm-up and decay)
- `checkpoint.py`: the checkpoint format, atomic writes, file records, FSDP shards (DCP)
- `state.py`: what goes into and comes out of a checkpoint; export to a model directory
- `distributed.py`: torchrun, DDP and FSDP; `metrics.py` (metrics.jsonl, TensorBoard), `plots.py`
"""
