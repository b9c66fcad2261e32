"""The lite-vs-bert study: where ALBERT's speed-up over BERT comes from (bytes held, bytes
sent, compute), measured on this machine and modelled at N ranks.

- `rows.py`: the rows (Table 1's shapes, the paper's figures), a fast model, a batch, FLOPs
- `footprint.py`: bytes held per rank under DDP and FSDP, and FSDP's step by rule
- `timing.py`, `activations.py`, `communication.py`: one process's step, activation
  memory, the collectives of a step at 2 gloo processes
- `throughput.py`, `gloo_check.py`, `predictions.py`: the model at N ranks, its check on
  this machine, and its speed-ups on named interconnects
- `study.py`: the parts, resumably; `report.py`: report.md, results.json, speedup.png
"""
