"""Pre-training data: corpus files -> documents -> token arrays -> instances -> batches.

- `sources.py`: the corpora a package registry carries (the readers of corpus files are
  `litebert.readers`, below this package)
- `build_config.py`: the options of `litebert data build`; `builder.py`: the build, pass 1
  (token arrays), the manifest and the cache; `splits.py`: pass 2 (instances, static masks);
  `pool.py`: the process pool both passes share
- `instances.py`: segment pairs (SOP / NSP / none); `packing.py`: RoBERTa's packed text
  (full-sentences, doc-sentences); `masking.py`: whole-word n-gram masking
- `loader.py`: the Dataset, the samplers (shuffled per rank, or per-row streams), the collator
- `heldout.py`: the held-out documents and the cross-evaluation set drawn from them
- `report.py`: `data inspect` and `data stats`
"""


# The loader (PretrainingDataset, the samplers, collate) is imported from litebert.data.loader:
# not here, because it imports torch and every build worker imports this package.
from litebert.data.builder import BuildConfig, build
from litebert.data.integrity import DataError

__all__ = ["BuildConfig", "DataError", "build"]
