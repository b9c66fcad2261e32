"""Pre-training data: corpus files -> documents -> token shards -> instances -> batches."""

from litebert.data.builder import BuildConfig, DataError, build
from litebert.data.loader import PretrainingDataset, RankSampler, collate

__all__ = ["BuildConfig", "DataError", "PretrainingDataset", "RankSampler", "build", "collate"]
