"""XLNet's items (litebert.objectives.plm_data) against straightforward token-by-token
references of the official data_utils.py rules written here: the A/B split, the span loop
(with n counting words, the fix of xlnet#16 / #220), the factorisation order, perm_mask;
plus exact target counts, whole words, p(n) ~ 1/n, functional tokens never targets,
determinism per (seed, epoch, index), and bi_data with the mirrored stream sampler."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from litebert.data.builder import BuildConfig, build
from litebert.data.loader import sampler_for
from litebert.data.streams import SENTENCE_START, WORD_START, Stream
from litebert.objectives.plm_data import (
    PLMDataset,
    local_perm_ranks,
    perm_mask,
    sample_spans,
    sample_targets,
    span_probabilities,
    split_a_and_b,
    trim_pair,
)
from litebert.tokenization import train_sentencepiece
from tests.data.builds import write_corpus

SEQ, REUSE = 64, 32


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("plm")
    corpus = write_corpus(root / "corpus.txt")
    tokenizer = train_sentencepiece([corpus], root / "tok", vocab_size=200).parent
    config = BuildConfig(max_seq_length=SEQ, format="bert", heldout_fraction=0.1,
                         objective="none", packing="streams")
    build([corpus], tokenizer, root / "data", config)
    return root / "data"


# ---- references: the official rules, one token at a time -------------------------------------

def reference_split(sent_ids: np.ndarray, begin: int, total: int, rng):
    """data_utils._split_a_and_b on one row's sentence ids, drawing from `rng` in the same
    order (label as litebert gives it: 1 = B random)."""
    data_len = len(sent_ids)
    end_idx, cut_points = begin + 1, []
    while end_idx < data_len:
        if sent_ids[end_idx] != sent_ids[end_idx - 1]:
            if end_idx - begin >= total:
                break
            cut_points.append(end_idx)
        end_idx += 1
    if not cut_points or rng.random() < 0.5:
        label = 1
        a_end = end_idx if not cut_points else int(rng.choice(cut_points))
        b_len = max(1, total - (a_end - begin))
        b_begin = int(rng.integers(0, data_len - 1 - b_len + 1))
        b_end = b_begin + b_len
        while b_begin > 0 and sent_ids[b_begin - 1] == sent_ids[b_begin]:
            b_begin -= 1
        while b_end < data_len - 1 and sent_ids[b_end - 1] == sent_ids[b_end]:
            b_end += 1
    else:
        label = 0
        a_end = int(rng.choice(cut_points))
        b_begin, b_end = a_end, end_idx
    while a_end - begin + b_end - b_begin > total:
        if a_end - begin > b_end - b_begin:
            a_end -= 1
        else:
            b_end -= 1
    return begin, a_end, b_begin, b_end, label


def reference_spans(word_starts: np.ndarray, goal: int, rng, max_span=5, alpha=6, beta=1):
    """data_utils._sample_mask's span loop, the end found by the word start of the piece
    reached (the fix), a span longer than the count left cut back to the words that fit."""
    length, count, cursor, spans = len(word_starts), 0, 0, []
    p = 1.0 / np.arange(1, max_span + 1)
    p /= p.sum()
    while cursor < length and count < goal:
        n = min(int(rng.choice(max_span, p=p)) + 1, goal - count)
        context = n * alpha // beta
        left = int(rng.integers(context))
        begin = cursor + left
        while begin < length and not word_starts[begin]:
            begin += 1
        if begin >= length:
            break
        end, words = begin + 1, 1
        while end < length:
            if word_starts[end]:
                words += 1
                if words > n:
                    break
            end += 1
        if end >= length:
            break
        if end - begin > goal - count:
            while end > begin and (end - begin > goal - count or not word_starts[end]):
                end -= 1
            if end == begin:
                first = begin + 1
                while not word_starts[first]:
                    first += 1
                cursor = first + context - left
                continue
        spans.append((begin, end))
        count += end - begin
        cursor = end + context - left
    return spans


def reference_perm_mask(rank, target, functional, reuse: int) -> np.ndarray:
    """Who cannot see whom, rule by rule, as _local_perm and get_dataset define it."""
    size = len(rank)
    hidden = np.zeros((size, size), dtype=bool)
    for i in range(size):
        for j in range(size):
            if (i < reuse) != (j < reuse):
                hidden[i, j] = i < reuse  # the reused part never sees the new part
            elif not (target[j] or functional[j]):
                hidden[i, j] = False  # plain tokens are seen by everyone
            elif target[i]:
                hidden[i, j] = rank[j] >= rank[i]  # a target sees strictly earlier ones
            elif functional[i]:
                hidden[i, j] = rank[j] > rank[i]  # a functional token sees itself too
            else:
                hidden[i, j] = True  # plain tokens never see targets or functional ones
    return hidden


def random_stream(rng, length: int) -> Stream:
    starts = rng.random(length) < 0.08
    starts[0] = True
    words = (rng.random(length) < 0.6) | starts
    flags = (words * WORD_START | starts * SENTENCE_START).astype(np.uint8)
    return Stream(rng.integers(0, 1000, length).astype(np.uint16), flags)


# ---- A and B ---------------------------------------------------------------------------------

def test_trim_pair_is_the_official_loop():
    for a in range(0, 30):
        for b in range(0, 30):
            for total in range(1, 40):
                x, y = a, b
                while x + y > total:
                    if x > y:
                        x -= 1
                    else:
                        y -= 1
                assert trim_pair(a, b, total) == (x, y)


@pytest.mark.parametrize("backward", [False, True])
def test_split_a_and_b_is_the_officials(backward):
    rng = np.random.default_rng(1)
    stream = random_stream(rng, 2000)
    view = stream.reversed() if backward else stream
    sent_ids = np.cumsum(view.sentence_starts(0, len(view))) % 2
    labels = []
    for seed in range(300):
        begin = int(rng.integers(0, 2000 - 40))
        total = int(rng.integers(2, 39))
        ours = split_a_and_b(view, begin, total, np.random.default_rng(seed))
        assert ours == reference_split(sent_ids, begin, total, np.random.default_rng(seed))
        a0, a1, b0, b1, label = ours
        assert a1 - a0 + b1 - b0 == total and a1 > a0 and b1 > b0
        labels.append(label)
    assert 0.35 < np.mean(labels) < 0.75  # random B half the time, and when A cannot end


def test_items_lay_out_reuse_a_sep_b_sep_cls(data_dir):
    ds = PLMDataset(data_dir, "train", seed=5)
    total = SEQ - REUSE - 3
    for index in range(0, len(ds), 37):
        item = ds[index]
        # The first draws of the item's generator are its pair.
        a0, a1, b0, b1, label = split_a_and_b(ds.stream, index * REUSE + REUSE, total,
                                              ds.item_rng(index))
        ids = item["input_ids"].numpy()
        a_len = a1 - a0
        expected = np.concatenate([ds.stream.tokens(index * REUSE, a1), [ds.sep_id],
                                   ds.stream.tokens(b0, b1), [ds.sep_id, ds.cls_id]])
        assert np.array_equal(ids, expected)
        types = [0] * (REUSE + a_len + 1) + [1] * (b1 - b0 + 1) + [2]
        assert item["token_type_ids"].tolist() == types
        assert np.flatnonzero(item["is_functional"].numpy()).tolist() == \
            [REUSE + a_len, SEQ - 2, SEQ - 1]
        assert int(item["next_sentence_label"]) == label
        assert item["attention_mask"].tolist() == [1] * SEQ


# ---- targets ---------------------------------------------------------------------------------

def test_spans_are_the_official_loop_over_words():
    rng = np.random.default_rng(2)
    for seed in range(300):
        length = int(rng.integers(5, 120))
        starts = rng.random(length) < rng.uniform(0.3, 1.0)
        goal = int(rng.integers(1, length))
        ours = sample_spans(starts, np.zeros(length, dtype=bool), goal,
                            np.random.default_rng(seed))
        assert ours == reference_spans(starts, goal, np.random.default_rng(seed))


def test_spans_are_whole_words_of_n_words_with_p_one_over_n():
    # Words of three pieces: the official loop (n counting pieces) would cut them.
    length = 3000
    starts = np.arange(length) % 3 == 0
    counts = np.zeros(6)
    for seed in range(60):
        for begin, end in sample_spans(starts, np.zeros(length, dtype=bool), length,
                                       np.random.default_rng(seed)):
            assert begin % 3 == 0 and end % 3 == 0  # whole words
            counts[(end - begin) // 3] += 1
    assert counts[0] == 0 and counts.sum() > 5000
    share = counts[1:] / counts.sum()
    assert np.allclose(share, span_probabilities(5), atol=0.02), share


def test_targets_are_exact_and_never_functional(data_dir):
    for bi_data in (False, True):
        ds = PLMDataset(data_dir, "train", seed=1, num_predict=12, bi_data=bi_data)
        for index in range(0, len(ds), 11):
            item = ds[index]
            target, functional = item["is_target"], item["is_functional"]
            assert not (target & functional).any()
            assert int(target[:REUSE].sum()) == 6 and int(target[REUSE:].sum()) == 6
            positions = item["target_positions"]
            assert positions.tolist() == torch.nonzero(target).flatten().tolist()
            assert torch.equal(item["target_ids"], item["input_ids"][positions])
            assert item["target_weights"].tolist() == [1.0] * 12


def test_targets_fill_every_slot_they_can_and_pad_the_rest():
    words = np.ones(8, dtype=bool)
    functional = np.zeros(8, dtype=bool)
    functional[[3, 6, 7]] = True
    for seed in range(20):
        mask = sample_targets(words, functional, 7, np.random.default_rng(seed))
        assert mask.tolist() == (~functional).tolist()  # 5 tokens can be targets, no more
        back = sample_targets(words, functional, 3, np.random.default_rng(seed), reverse=True)
        assert back.sum() == 3 and not (back & functional).any()


def test_reversed_parts_get_spans_of_whole_words_of_the_text():
    # Text read backwards: its words start at the LAST position of each 3-piece run here.
    length = 300
    forward_starts = np.arange(length) % 3 == 0
    view_starts = forward_starts[::-1]  # what a reversed stream gives, position by position
    for seed in range(20):
        mask = sample_targets(view_starts, np.zeros(length, dtype=bool), 120,
                              np.random.default_rng(seed), reverse=True, max_span=5)
        flipped = mask[::-1]  # back in reading order of the text
        spans = sample_spans(forward_starts, np.zeros(length, dtype=bool), 120,
                             np.random.default_rng(seed))
        for begin, end in spans:
            assert flipped[begin:end].all()


# ---- factorisation order and perm_mask -------------------------------------------------------

def test_ranks_share_one_shuffle_across_blocks():
    rng = np.random.default_rng(0)
    ranks = local_perm_ranks(32, 8, rng)
    assert sorted(ranks.tolist()) == list(range(32))
    blocks = ranks.reshape(4, 8) - np.arange(4)[:, None] * 8
    assert (blocks == blocks[0]).all() and sorted(blocks[0].tolist()) == list(range(8))
    tail = local_perm_ranks(20, 8, np.random.default_rng(3))  # 8 + 8 + a block of 4
    first = tail[:8]
    assert sorted(tail.tolist()) == list(range(20))
    # The short block keeps the order the shuffle gives its first 4 positions.
    assert np.array_equal(np.argsort(tail[16:]), np.argsort(first[:4]))


def test_perm_mask_is_the_official_rules():
    rng = np.random.default_rng(4)
    for reuse, size in ((8, 16), (6, 14), (12, 16)):
        rows = []
        for _ in range(4):
            ranks = np.concatenate([local_perm_ranks(reuse, min(reuse, 4), rng),
                                    reuse + local_perm_ranks(size - reuse, 4, rng)])
            functional = np.zeros(size, dtype=bool)
            functional[rng.choice(np.arange(reuse, size), 3, replace=False)] = True
            target = (rng.random(size) < 0.4) & ~functional
            rows.append((ranks, target, functional))
        batch = [torch.from_numpy(np.stack(x)) for x in zip(*rows, strict=True)]
        mask = perm_mask(*batch, reuse_len=reuse)
        assert mask.shape == (4, size, size) and mask.dtype == torch.bool
        for b, (ranks, target, functional) in enumerate(rows):
            assert np.array_equal(mask[b].numpy(),
                                  reference_perm_mask(ranks, target, functional, reuse))


def test_the_halves_of_a_real_batch(data_dir):
    ds = PLMDataset(data_dir, "train", seed=2)
    batch = ds.collate([ds[i] for i in range(6)])
    mask = perm_mask(batch["perm_rank"], batch["is_target"], batch["is_functional"],
                     ds.reuse_len)
    assert mask[:, :REUSE, REUSE:].all()  # the reused half never sees the new one
    assert not mask[:, REUSE:, :REUSE].any()  # the new half sees all of the reused one
    plain = ~(batch["is_target"] | batch["is_functional"])  # (B, T)
    for half in (slice(0, REUSE), slice(REUSE, SEQ)):
        inside, seen = mask[:, half, half], plain[:, half]
        assert not (inside & seen[:, None, :]).any()  # plain tokens: visible to their half
        assert (inside | ~seen[:, :, None] | seen[:, None, :]).all()  # ... and see no others
    for b in range(6):
        ranks = batch["perm_rank"][b]
        assert sorted(ranks.tolist()) == list(range(SEQ))
        assert (ranks[:REUSE] < REUSE).all()


# ---- determinism, epochs, bi_data ------------------------------------------------------------

def test_items_depend_on_seed_epoch_and_index_only(data_dir):
    first, again = PLMDataset(data_dir, seed=7), PLMDataset(data_dir, seed=7)
    for index in (0, 5, len(first) - 1):
        a, b = first[index], again[index]
        assert all(torch.equal(a[k], b[k]) for k in a)
    again.set_epoch(1)
    changed = [not torch.equal(first[i]["is_target"], again[i]["is_target"])
               and not torch.equal(first[i]["perm_rank"], again[i]["perm_rank"])
               for i in range(30)]
    assert sum(changed) >= 28
    again.set_epoch(0)
    assert torch.equal(first[3]["is_target"], again[3]["is_target"])
    other = PLMDataset(data_dir, seed=8)
    assert not torch.equal(first[3]["is_target"], other[3]["is_target"])


def test_bi_data_mirrored_batches(data_dir):
    ds = PLMDataset(data_dir, "train", seed=0, bi_data=True)
    n = ds.windows
    assert len(ds) == 2 * n
    backward = ds.stream.reversed()
    for w in (0, 7, n - 1):
        assert torch.equal(ds[n + w]["input_ids"][:REUSE],
                           torch.from_numpy(backward.tokens(w * REUSE, (w + 1) * REUSE)))
    rows, groups = 4, 2
    sampler = sampler_for("mirrored-streams", len(ds), 0, 1, rows, groups, seed=0)
    order = np.array(list(sampler)).reshape(-1, groups, rows)  # (steps, groups, rows)
    steps, streams = order.shape[0], groups * rows // 2
    assert steps == n // streams
    assert (order[..., :2] < n).all() and (order[..., 2:] >= n).all()
    assert (np.diff(order, axis=0) == 1).all()  # every row continues its stream
    for g in range(groups):
        for r in range(2):
            forward = order[:, g, r]
            mirror = n - 1 - (order[:, g, 2 + r] - n)  # the forward window of that text
            # The backward row reads the text of its forward row's stretch, from its end.
            assert forward.min() <= mirror.min() + 1 and mirror.max() <= forward.max() + 1
    batch = ds.collate([ds[int(i)] for i in order[0, 0]])
    assert batch["input_ids"].shape == (rows, SEQ)
    with pytest.raises(ValueError, match="even micro-batch"):
        sampler_for("mirrored-streams", len(ds), 0, 1, 3, 1, seed=0)


def test_wrong_settings_are_errors(data_dir, tmp_path):
    with pytest.raises(ValueError, match="perm_size=40: must be in 1 .. reuse_len"):
        PLMDataset(data_dir, perm_size=40)
    with pytest.raises(ValueError, match="num_predict=62"):
        PLMDataset(data_dir, num_predict=62)
    ds = PLMDataset(data_dir, "heldout", seed=0)
    assert ds.num_predict == SEQ // 6 and ds.perm_size == REUSE and len(ds) == ds.windows > 0
