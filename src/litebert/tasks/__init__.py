"""Fine-tuning tasks: data readers, heads and training loops."""
