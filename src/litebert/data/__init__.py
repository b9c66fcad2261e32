"""Pre-training data: corpus files -> documents -> token shards -> instances -> batches."""
