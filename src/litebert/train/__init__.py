"""Pre-training: the objective-agnostic loop and what it is built from.

- `pretrain.py`: the Trainer (accumulation over the global batch, clipping, eval, export)
- `run_config.py`: PretrainConfig and the recipes it is read from
- `evaluation.py`: held-out evaluation, and `litebert eval-pretraining` (MLM + SOP and NSP on
  pairs from the same documents, the paper's Table 5 cross evaluation)
- `lamb.py` (LAMB and AdamW parameter groups), `schedule.py` (warm-up and decay)
- `checkpoint.py`: the checkpoint format, atomic writes, file records, FSDP shards (DCP)
- `state.py`: what goes into and comes out of a checkpoint; export to a model directory
- `distributed.py`: torchrun, DDP and FSDP; `metrics.py` (metrics.jsonl, TensorBoard), `plots.py`
"""
