"""ELECTRA's training forward has static shapes and no host syncs: the corruption equals the
previous dynamic-shaped code's on the used slots, and torch.compile(fullgraph=True) takes
counts + loss_sums whole, one graph for every step of a data directory."""

from __future__ import annotations

import pytest
import torch
import torch._dynamo.testing
import torch.nn.functional as F

from litebert.data.loader import PretrainingDataset, collate
from litebert.model.attention import key_padding_mask
from litebert.objectives import corruption as C
from litebert.objectives.electra import ElectraPretraining
from tests.helpers.corruption import MASK, NEVER, rows
from tests.helpers.electra import objective_and_model

NO_DROPOUT = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}


@pytest.fixture(scope="module")
def train(data_dir) -> PretrainingDataset:
    return PretrainingDataset(data_dir, "train", seed=0)

# ---- the previous (dynamic-shaped) corruption, kept here as the reference ----------------


def old_row_keys(ids, mask, seed, step):
    token = C.mix((ids.long() % C.PRIME * 1009 + torch.arange(ids.shape[1])) % C.PRIME)
    content = C.mix((token * mask.long()).sum(-1) % C.PRIME)
    run = C.mix(torch.tensor((seed % C.PRIME) * 7919 % C.PRIME))
    return C.mix((content + C.mix((run + step % C.PRIME) % C.PRIME)) % C.PRIME)


def old_data_slots(ids, labels, keys):
    masked = labels != C.IGNORE
    counts = masked.sum(-1)
    N = max(1, int(counts.max()))
    order = torch.sort(masked.to(torch.int8), dim=1, descending=True, stable=True).indices
    used = torch.arange(N)[None, :] < counts[:, None]
    positions = order[:, :N] * used
    return C.Slots(positions, used, ids.gather(1, positions) * used, C._slot_keys(keys, N))


def old_generator_input(ids, s, mask_id):
    shown = s.used & (C.uniform(s.keys, 1, "shown")[..., 0] < C.MASK_SHOWN)
    r = torch.arange(ids.shape[0])[:, None].expand_as(s.used)
    out = ids.clone()
    out[r[shown], s.positions[shown]] = mask_id
    return out


def old_replace(ids, s, sampled):  # sampled (M,): the used slots', row-major
    B, N = s.used.shape
    owner = torch.full_like(ids, -1).scatter_reduce(
        1, s.positions, torch.where(s.used, torch.arange(N).expand(B, N), -1), reduce="amax")
    values = torch.zeros_like(s.positions)
    values[s.used] = sampled
    values = values.gather(1, owner.gather(1, s.positions).clamp(min=0))
    r = torch.arange(B)[:, None].expand(B, N)
    fake = ids.clone()
    fake[r[s.used], s.positions[s.used]] = values[s.used]
    return fake, (fake != ids).float()


def old_forward(model: ElectraPretraining, batch, step: int) -> dict[str, torch.Tensor]:
    c, mask, labels = model.corrupting, batch["attention_mask"], batch.get("labels")
    ids = C.original_ids(batch)
    keys = old_row_keys(ids, mask, c.seed, step)
    if c.data_masks:
        s = old_data_slots(ids, labels, keys)
    else:
        candidates = C.maskable(ids, mask, model.never_masked)
        k = C.slots_per_row(mask, candidates, c.mask_prob, c.max_seq_length)
        s = C.draw_slots(ids, candidates, k, keys, c.mask_prob, c.max_seq_length)
    shown = old_generator_input(ids, s, c.mask_id)
    embeddings = model.discriminator.backbone.embeddings
    x = embeddings(shown, batch["token_type_ids"])
    h = model.generator.encoder(x, key_padding_mask(mask))
    r = torch.arange(ids.shape[0])[:, None].expand_as(s.used)
    logits = model.generator.predictions(h[r[s.used], s.positions[s.used]],
                                         embeddings.word_embeddings.weight)  # (M, V)
    targets = s.targets[s.used]
    sampled = C.sample(logits, s.keys[s.used], c.temperature)
    fake, replaced = old_replace(ids, s, sampled)
    d = model.discriminator(fake, mask, batch["token_type_ids"]).logits
    real = mask.bool()
    return {"shown": shown, "logits": logits, "targets": targets, "sampled": sampled,
            "corrupted": fake, "replaced": replaced,
            "generator_sum": F.cross_entropy(logits, targets, reduction="sum"),
            "rtd_sum": F.binary_cross_entropy_with_logits(d[real], replaced[real],
                                                          reduction="sum")}


# ---- the static corruption equals it on the used slots -----------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_static_corruption_functions_equal_the_previous_ones(seed):
    ids, mask = rows([40, 9, 6, 23, 3], 40, seed=seed)  # padded rows, short ones repeat slots
    candidates = C.maskable(ids, mask, NEVER)
    k = C.slots_per_row(mask, candidates, 0.5, 40)
    keys = C.row_keys(ids, mask, 5, torch.tensor(seed + 3))
    assert torch.equal(keys, old_row_keys(ids, mask, 5, seed + 3))  # a tensor step: same key
    s = C.draw_slots(ids, candidates, k, keys, 0.5, 40)
    dup = (s.positions[:, :, None] == s.positions[:, None, :]) & s.used[:, :, None] & \
        s.used[:, None, :]
    assert int(dup.sum()) > int(s.used.sum())  # some positions are drawn twice
    assert torch.equal(C.generator_input(ids, s, MASK), old_generator_input(ids, s, MASK))
    logits = torch.randn(*s.positions.shape, 600, generator=torch.Generator().manual_seed(seed))
    sampled = C.sample(logits.flatten(0, 1), s.keys.flatten()).view_as(s.positions)
    assert torch.equal(sampled[s.used], C.sample(logits[s.used], s.keys[s.used]))
    new, old = C.replace(ids, s, sampled), old_replace(ids, s, sampled[s.used])
    assert torch.equal(new[0], old[0]) and torch.equal(new[1], old[1])
    # The data's masks: the same used slots in N = max_predictions_per_seq columns.
    labels = torch.where(candidates & (torch.rand(ids.shape) < 0.3), ids, C.IGNORE)
    static, dynamic = C.data_slots(ids, labels, keys, 30), old_data_slots(ids, labels, keys)
    for field in ("positions", "targets", "keys", "used"):
        a, b = getattr(static, field), getattr(dynamic, field)
        assert torch.equal(a[:, :b.shape[1]], b) and not static.used[:, b.shape[1]:].any()


@pytest.mark.parametrize("fields", [{}, {"mask_prob": 0.5}, {"generator_masking": "data"}],
                         ids=["uniform", "repeats", "data"])
def test_the_static_forward_corrupts_and_scores_as_the_previous_one(data_dir, train, fields):
    objective, model = objective_and_model(data_dir, train, **fields)
    items = sorted((train[i] for i in range(60)), key=lambda item: len(item["input_ids"]))
    batch = collate(items[:4] + items[-4:])  # the 4 shortest rows padded to the longest
    assert not bool(batch["attention_mask"].all())
    objective.begin_step(4)
    with torch.no_grad():
        old = old_forward(model, batch, 4)
        new = model(**batch)  # the step from the buffer begin_step wrote
        sums = objective.loss_sums(model, batch)
    used = new.slot_weights > 0
    N = train.masking.max_predictions_per_seq if fields.get("generator_masking") else \
        C.slot_count(train.config.max_seq_length, model.corrupting.mask_prob)
    assert new.generator_logits.shape[:2] == new.targets.shape == (8, N)  # static N
    assert torch.equal(new.targets[used], old["targets"])
    assert torch.equal(new.corrupted, old["corrupted"])  # same positions, samples, writes
    assert torch.equal(new.replaced, old["replaced"])
    if fields.get("mask_prob"):
        assert int(old["replaced"].sum()) < len(old["targets"])  # repeated positions
    torch.testing.assert_close(new.generator_logits[used], old["logits"], rtol=0, atol=1e-6)
    torch.testing.assert_close(sums, torch.stack([old["generator_sum"], old["rtd_sum"]]),
                               rtol=1e-6, atol=0)
    assert int(new.targets[~used].abs().sum()) == 0


def test_a_batch_without_attention_mask_is_an_unpadded_one(data_dir, train):
    objective, model = objective_and_model(data_dir, train)
    batch = collate([train[i] for i in range(4)])
    full = {k: v[:, :24] if v.ndim == 2 else v for k, v in batch.items()}
    full["attention_mask"] = torch.ones_like(full["input_ids"])
    bare = {k: v for k, v in full.items() if k != "attention_mask"}
    assert torch.equal(objective.counts(bare), objective.counts(full))
    with torch.no_grad():
        torch.testing.assert_close(objective.loss_sums(model, bare),
                                   objective.loss_sums(model, full), rtol=0, atol=0)


# ---- torch.compile takes it whole --------------------------------------------------------


def unpadded_batches(train, width: int = 32) -> list[dict[str, torch.Tensor]]:
    """Two batches of 4 of this data directory, each row cut to `width` tokens: no row is
    padded, so they come without attention_mask, as the collator gives such batches."""
    long = [item for item in (train[i] for i in range(60)) if len(item["input_ids"]) >= width]
    batches = []
    for group in (long[:4], long[4:8]):
        batch = collate([{k: v[:width] if v.ndim else v for k, v in item.items()}
                         for item in group])
        assert batch["input_ids"].shape == (4, width)
        del batch["attention_mask"]
        batches.append(batch)
    return batches


@pytest.mark.parametrize("masking", ["uniform", "data"])
def test_counts_and_loss_sums_compile_whole_once_for_every_step(data_dir, train, masking):
    objective, model = objective_and_model(data_dir, train, generator_masking=masking,
                                           model_overrides=NO_DROPOUT)
    model.train()
    batches = unpadded_batches(train)

    def step(batch):
        return torch.cat([objective.counts(batch), objective.loss_sums(model, batch)])

    torch._dynamo.reset()
    graphs = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(step, fullgraph=True, backend=graphs)  # a graph break raises
    sums = {}
    for number in (3, 4):
        for i, batch in enumerate(batches):
            objective.begin_step(number)
            expected = step(batch)
            sums[number, i] = compiled(batch)
            torch.testing.assert_close(sums[number, i], expected, rtol=1e-5, atol=1e-5)
    assert graphs.frame_count == 1  # no recompile for a new step or a new batch
    assert not torch.equal(sums[3, 0], sums[4, 0])  # the step reached the compiled graph
