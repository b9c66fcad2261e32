"""Fine-tuning on GLUE, SQuAD 1.1/2.0, RACE, multiple choice and generic tables.

- `registry.py`: the tasks, one entry each (adapter, recipe, own options); no torch
- `finetune_options.py`: the options every task shares, and the checks of a task's own
- `base.py`: FinetuneConfig, errors, the task-adapter protocol
- `finetune.py`: the one loop (AdamW, warmup + decay, best-on-dev, seeds)
- `runtime.py`: where it computes: device, torchrun's ranks (the split of a global batch, the
  ordered gather of evaluations), precision, compile
- adapters: `sequence.py` (GLUE, generic classification/regression), `qa.py` (SQuAD),
  `choice.py` (multiple choice: SWAG-style tables, RACE as a preset)
- readers of each benchmark's official layout: `glue.py`, `squad.py`, `race.py`,
  `tables.py` (CSV/TSV/JSON lines, Parquet, Arrow), `choice_data.py` (multiple-choice
  tables), with `examples.py` (example types, row reading); `classification.py`: a table's
  label set and whether its labels are scores
- `metrics.py`: the official metrics; `batching.py`: length-bucketed batches
- tables at scale: `table_cache.py` (tokenized once by worker processes into memory-mapped
  arrays, reused by every seed and run), `table_inputs.py` (batches built from them),
  `table_splits.py` (a task's splits as cached tables)
"""
