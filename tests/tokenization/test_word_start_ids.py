"""`Tokenizer.word_start_ids` with "the first token of a text" gives exactly the word starts
encode_batch_flat reports, for every backend: what lets a data directory derive them."""

from __future__ import annotations

import numpy as np
import pytest

from tests.fixtures_sp import EDGE_TEXTS


@pytest.mark.parametrize("kind", ["bbc_sentencepiece", "bbc_xlnet", "bbc_bpe", "bbc_wordpiece"])
def test_word_starts_follow_from_ids_and_text_starts(kind, request, bbc_sentences):
    tokenizer = request.getfixturevalue(kind)
    # As pass 1 encodes them: a sentence that continues a document carries the prefix that
    # running text gives it (byte-level BPE's space), so its first token may be "Ġword".
    texts = [s if i % 5 == 0 else tokenizer.continuation_prefix + s
             for i, s in enumerate(bbc_sentences[:2000] + list(EDGE_TEXTS))]
    ids, starts, lengths = tokenizer.encode_batch_flat(texts)
    derived = tokenizer.word_start_ids[ids]
    firsts = (np.cumsum(lengths) - lengths)[lengths > 0]
    derived[firsts] = True
    assert starts.dtype == bool and len(starts) == len(ids) > 20_000
    np.testing.assert_array_equal(derived, starts)
    # Not trivially true: a fair share of the tokens continue a word, and the rule for the
    # first token of a text matters for some of them (it is what the table alone misses).
    assert 0.05 < 1 - starts.mean() < 0.6
    if kind == "bbc_bpe":
        assert not tokenizer.word_start_ids[ids[firsts]].all()
