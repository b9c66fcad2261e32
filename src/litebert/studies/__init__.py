"""The paper's experiments as runnable studies.

- `spec.py`: a study as data (StudySpec, RunSpec), read from YAML; built-in ones in specs/
- `runner.py`: `run_study`: corpus, tokenizer, data, pre-training and evaluations of every
  run, resumable, one record per run (OUT/runs/<name>/study.json)

- `similarity.py`: Figure 2, the L2 distance and the angle between each layer's input and
  output embeddings
- `measured.py`: the studies that measure a system rather than train runs, one entry each;
  `lite_vs_bert/`: ALBERT's Tables 1-2, bytes held and sent, compute, speed at N ranks
"""
