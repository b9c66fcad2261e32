"""Pre-training data: corpus files -> documents -> token shards -> instances -> batches."""

from litebert.data.loader import PretrainingDataset, RankSampler, collate
from litebert.data.shards import BuildConfig, DataError, build

__all__ = ["BuildConfig", "DataError", "PretrainingDataset", "RankSampler", "build", "collate"]
