"""The run option `attention` (full, document, unpadded) and which data each can read; what
each asks of a batch is in attention_layout.py. No torch here: the run config, which parsers
and `litebert recipes` read, checks its `attention` with this module alone."""

from __future__ import annotations

ATTENTIONS = ("full", "document", "unpadded")


def check_attention(attention: str, packed: bool, where: str) -> None:
    """ValueError for an attention the data cannot have: `document` needs packed data (its
    items hold several documents; a sentence pair is one)."""
    if attention not in ATTENTIONS:
        raise ValueError(f"{where}: attention={attention!r}; choose from {', '.join(ATTENTIONS)}")
    if attention == "document" and not packed:
        raise ValueError(f"{where}: attention 'document' needs packed data (built with "
                         "--packing full-sentences or doc-sentences), whose rows hold several "
                         "documents; this data holds sentence pairs: use attention 'full' or "
                         "'unpadded', or rebuild the data packed")
