"""Pre-training data: corpus files -> documents -> token arrays -> instances -> batches.

- `sources.py`: the corpora a package registry carries (the readers of corpus files are
  `litebert.readers`, below this package)
- `builder.py`: `litebert data build`, memory-mapped token arrays, instances, manifest, cache
- `instances.py`: segment pairs (SOP / NSP / none); `packing.py`: RoBERTa's packed text
  (full-sentences, doc-sentences); `masking.py`: whole-word n-gram masking
- `loader.py`: the Dataset, the samplers (shuffled per rank, or per-row streams), the collator
- `heldout.py`: the held-out documents and the cross-evaluation set drawn from them
- `report.py`: `data inspect` and `data stats`
"""

from litebert.data.builder import BuildConfig, build
from litebert.data.integrity import DataError
from litebert.data.loader import PretrainingDataset, RankSampler, collate

__all__ = ["BuildConfig", "DataError", "PretrainingDataset", "RankSampler", "build", "collate"]
