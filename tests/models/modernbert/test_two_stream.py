"""Two-stream attention on the ModernBERT backbone (models/modernbert/model.py,
model/two_stream.py).
No paper or transformers class defines it, so nothing to compare against: these tests check
its properties instead. Without two-stream arguments the forward is the one-stream forward;
a target's query stream reads exactly the tokens its factorisation order shows it (never its
own), within the window at local positions, never padding; the content stream always reads
its own token; every weight and mask_emb learn; and PLM pre-trains on it end to end, its
export loading back to the same logits."""

from __future__ import annotations

import json
import math
import shutil

import pytest
import torch

import litebert
import litebert.model.layers as layers
from litebert.model import EncoderForPermutationLM
from litebert.model.two_stream import content_mask
from litebert.models.modernbert.model import ModernBertModel
from litebert.train import checkpoint
from litebert.train.pretrain import pretrain
from litebert.train.run_config import PretrainConfig, load_run_config
from litebert.train.state import load_model_state
from tests.helpers.models import randomize
from tests.helpers.modernbert import V, inputs, modern_config
from tests.helpers.pretrain import read_metrics

B, T = 2, 12
EXACT = dict(atol=1e-6, rtol=0.0)


def two_stream_model(seed: int = 0, **overrides) -> ModernBertModel:
    """modern_config (4 layers of 32, global at 0 and 3, window |i - j| <= 2) with mask_emb,
    every weight random (so that a dependence shows well above rounding), eval mode."""
    return randomize(ModernBertModel(modern_config(query_stream=True, **overrides)),
                     seed).eval()


def order(seed: int = 0, rows: int = B, length: int = T) -> tuple[torch.Tensor, torch.Tensor]:
    """A random factorisation order per row: rank (B, T), and perm_mask (B, T, T), True where
    i may not see j: j does not come before i (itself included)."""
    g = torch.Generator().manual_seed(seed)
    rank = torch.stack([torch.randperm(length, generator=g) for _ in range(rows)])
    return rank, rank[:, None, :] >= rank[:, :, None]


def ids(seed: int = 1) -> torch.Tensor:
    return torch.randint(3, V, (B, T), generator=torch.Generator().manual_seed(seed))


def changed(x: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
    """x with every position `where` (B, T) bool given another id, never the padding id 0."""
    return torch.where(where, (x - 3 + 7) % (V - 3) + 3, x)


# ---- the one-stream forward is untouched -------------------------------------------------------

def test_without_two_stream_arguments_the_forward_is_the_one_stream_forward(monkeypatch):
    """mask_emb is all query_stream adds (no other key), the one-stream forward never reads
    it, and it keeps its kernels' masks: none without padding (SDPA's unmasked path), the
    key-padding mask, documents; a perm_mask that hides nothing gives the same real
    tokens' states through the content stream."""
    plain = ModernBertModel(modern_config()).eval()
    model = ModernBertModel(modern_config(query_stream=True)).eval()
    model.load_state_dict(plain.state_dict(), strict=False)
    assert plain.mask_emb is None
    assert set(model.state_dict()) - set(plain.state_dict()) == {"mask_emb"}
    x = inputs()
    documents = (torch.arange(16) >= 5).long().expand(3, -1)  # (B, T)
    masks: list = []
    attend = layers.attend

    def recorded(q, k, v, mask, p):
        masks.append(mask)
        return attend(q, k, v, mask, p)

    monkeypatch.setattr(layers, "attend", recorded)
    with torch.no_grad():
        for kwargs in (dict(input_ids=x["input_ids"]), x, dict(**x, document_ids=documents)):
            masks.clear()
            ours = model(**kwargs, output_hidden_states=True)
            kinds = [None if m is None else (m.dtype, tuple(m.shape)) for m in masks]
            masks.clear()
            theirs = plain(**kwargs, output_hidden_states=True)
            assert kinds == [None if m is None else (m.dtype, tuple(m.shape)) for m in masks]
            for a, b in zip(ours.hidden_states, theirs.hidden_states, strict=True):
                assert torch.equal(a, b)
        assert kinds[0] == (torch.bool, (3, 1, 16, 16))  # documents' explicit mask
        masks.clear()
        model(input_ids=x["input_ids"])
        assert masks[0] is None  # SDPA's unmasked fast path at global position 0
        masks.clear()
        padded = model(**x).last_hidden_state
        assert masks[0].dtype == torch.bool and masks[0].shape == (3, 1, 1, 16)
        nothing_hidden = model(**x, perm_mask=torch.zeros(3, 16, 16)).last_hidden_state
    real = x["attention_mask"].bool()
    torch.testing.assert_close(nothing_hidden[real], padded[real], **EXACT)


# ---- what each stream reads ---------------------------------------------------------------------

def test_a_target_reads_what_its_order_shows_it_and_never_itself():
    """Target t's query stream is unchanged when its own token or any token not before it
    in the order changes, and changes with a token before it; positions 0..T-1, 4 layers
    (global and local), one forward per case."""
    model = two_stream_model()
    rank, perm = order()
    x = ids()
    for r in (4, 8, 11):  # the targets: the tokens ranked r in each row
        target = (rank == r).long().argmax(dim=1, keepdim=True)  # (B, 1)
        seen = (rank < r)  # (B, T): what the target may read
        before = (rank == r - 1)  # one token it reads
        with torch.no_grad():
            base, own, after, earlier = (
                model(y, perm_mask=perm, target_positions=target).last_hidden_state
                for y in (x, changed(x, rank == r), changed(x, ~seen), changed(x, before)))
        torch.testing.assert_close(own, base, **EXACT)
        torch.testing.assert_close(after, base, **EXACT)
        assert (earlier - base).abs().amax(dim=(1, 2)).min() > 1e-3  # in every row


def test_the_content_stream_reads_itself_and_what_comes_before():
    """The content stream (hidden_states[-1]) of each token changes with its own token, the
    first in the order (which sees nothing else) included, and not with tokens after it; the
    query stream is the same whether the last content update is computed or skipped."""
    model = two_stream_model()
    rank, perm = order()
    x, target = ids(), torch.tensor([[3, 7]] * B)
    with torch.no_grad():
        out = model(x, perm_mask=perm, target_positions=target, output_hidden_states=True)
        skipped = model(x, perm_mask=perm, target_positions=target).last_hidden_state
        assert torch.equal(out.last_hidden_state, skipped)
        content = out.hidden_states[-1]  # (B, T, H)
        for r in (0, 6):
            mine = rank == r  # (B, T)
            own = model(changed(x, mine), perm_mask=perm, target_positions=target,
                        output_hidden_states=True).hidden_states[-1]
            after = model(changed(x, rank > r), perm_mask=perm, target_positions=target,
                          output_hidden_states=True).hidden_states[-1]
            assert (own[mine] - content[mine]).abs().amax(dim=-1).min() > 1e-3
            torch.testing.assert_close(after[mine], content[mine], **EXACT)


def test_a_target_at_a_local_position_reads_its_window_only():
    """Layer position 1 of 2 is local (window |i - j| <= 2): its query stream at target 8
    reads keys 6..10 but not 8 itself, whatever lies further; position 0 (global) reads
    them all. The model's own masks, tables and module; position 0 is always global, so the
    property is checked where it holds exactly, at the local position's attention."""
    model = two_stream_model(num_hidden_layers=2, num_hidden_groups=2,
                             global_attn_every_n_layers=2)
    encoder, L = model.encoder, 16
    assert encoder.is_global == [True, False]
    target, positions = torch.tensor([[8]]), torch.arange(L)
    queries = encoder.query_rows(None, None, target, None, positions, L, torch.float32)
    masks, ropes = encoder.attention_masks(content_mask(None, None, L, positions.device), L,
                                           positions.device), encoder.rotary_tables(positions)
    g = torch.randn(1, 1, 32, generator=torch.Generator().manual_seed(2))
    x = torch.randn(1, L, 32, generator=torch.Generator().manual_seed(3))

    def query_stream(kind: int, keys: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return encoder.attentions[1](keys, masks[kind], ropes[kind], g=g,
                                         query=queries[kind])[1]

    base = query_stream(1, x)
    for j in range(L):
        moved = x.clone()
        moved[0, j] = torch.randn(32, generator=torch.Generator().manual_seed(j))
        local_diff = (query_stream(1, moved) - base).abs().max()
        assert (local_diff > 1e-3) == (abs(j - 8) <= 2 and j != 8), j
        global_diff = (query_stream(0, moved) - query_stream(0, x)).abs().max()
        assert (global_diff > 1e-3) == (j != 8), j


def test_the_window_shapes_the_query_stream_of_the_whole_model():
    small = two_stream_model()
    wide = ModernBertModel(modern_config(query_stream=True, local_attention=64)).eval()
    wide.load_state_dict(small.state_dict())
    _, perm = order()
    target = torch.tensor([[2, 9]] * B)
    with torch.no_grad():
        a, b = (m(ids(), perm_mask=perm, target_positions=target).last_hidden_state
                for m in (small, wide))
    assert (a - b).abs().max() > 1e-3


def test_padding_changes_nothing():
    """Rows of 16, 11 and 6 real tokens: other ids at the padding positions leave every
    target's query stream and every real token's content stream as they were."""
    model = two_stream_model()
    x = inputs()
    _, perm = order(rows=3, length=16)
    target = torch.tensor([[1, 14], [2, 9], [0, 5]])
    padding = x["attention_mask"] == 0
    with torch.no_grad():
        a, b = (model(y, x["attention_mask"], perm_mask=perm, target_positions=target,
                      output_hidden_states=True)
                for y in (x["input_ids"], changed(x["input_ids"], padding)))
    torch.testing.assert_close(a.last_hidden_state, b.last_hidden_state, **EXACT)
    torch.testing.assert_close(a.hidden_states[-1][~padding], b.hidden_states[-1][~padding],
                               **EXACT)


def test_target_mapping_equals_target_positions_and_its_empty_slots_read_nothing():
    """One-hot rows select the same targets as their indices; a row of zeros (a padding
    slot) attends to nothing: its state is the same whatever the input."""
    model = two_stream_model()
    _, perm = order()
    target = torch.tensor([[3, 7, 0], [5, 1, 0]])
    mapping = torch.nn.functional.one_hot(target, T).float()  # (B, P, T)
    mapping[:, 2] = 0.0  # the third slot is padding
    with torch.no_grad():
        by_index = model(ids(), perm_mask=perm, target_positions=target).last_hidden_state
        one_hot, other = (model(y, perm_mask=perm, target_mapping=mapping).last_hidden_state
                          for y in (ids(), ids(seed=5)))
    torch.testing.assert_close(one_hot[:, :2], by_index[:, :2], **EXACT)
    torch.testing.assert_close(one_hot[:, 2], other[:, 2], **EXACT)
    assert (one_hot[:, 2] - by_index[:, 2]).abs().max() > 1e-3


# ---- training ----------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [
    dict(),
    dict(sharing="all", num_hidden_groups=1, embedding_size=16),  # one module, E != H
])
def test_every_weight_and_mask_emb_learn(shape):
    model = randomize(EncoderForPermutationLM(modern_config(query_stream=True, **shape)))
    rank, perm = order()
    target = torch.tensor([[3, 7]] * B)
    labels = ids(seed=4).gather(1, target)
    model(ids(), perm_mask=perm, target_positions=target, labels=labels).loss.backward()
    quiet = [k for k, p in model.named_parameters() if p.grad is None or not p.grad.any()]
    assert quiet == []
    assert model.backbone.mask_emb.grad.abs().sum() > 0


def test_mask_emb_is_initialised_as_the_embeddings():
    """ModernBERT's truncated normal, std initializer_range cut at 2 std."""
    torch.manual_seed(0)
    model = ModernBertModel(modern_config(query_stream=True, hidden_size=128,
                                          embedding_size=128))
    weights = model.mask_emb.detach()
    assert float(weights.abs().max()) <= 2 * 0.02
    assert float(weights.std()) == pytest.approx(0.88 * 0.02, rel=0.25)


def test_flops_per_target_leave_out_the_keys_and_values():
    """The content stream's count less the query stream's is Wqkv's k and v rows, 2 H^2 per
    layer position: the attention products and GeGLU are the same per token."""
    config = modern_config(num_hidden_layers=6, num_hidden_groups=6, local_attention=8)
    for seq in (8, 64):
        difference = (ModernBertModel.flops_per_token(config, seq)
                      - ModernBertModel.query_stream_flops_per_target(config, seq))
        assert difference == 6.0 * 6 * 2 * 32 * 32


def test_what_two_streams_refuse():
    model = two_stream_model()
    _, perm = order()
    target = torch.tensor([[1]] * B)
    with pytest.raises(ValueError, match="document_ids: two-stream attention .* reads the "
                                         "'full' layout only"):
        model(ids(), perm_mask=perm, document_ids=torch.zeros(B, T, dtype=torch.long))
    with pytest.raises(ValueError, match="this ModernBERT backbone has no query stream"):
        ModernBertModel(modern_config())(ids(), perm_mask=perm, target_positions=target)
    with pytest.raises(ValueError, match="keeps no memories"):
        model(ids(), mems=(torch.zeros(1, B, 32),), target_positions=target)


# ---- pre-training end to end -------------------------------------------------------------------

MICRO = dict(hidden_size=32, embedding_size=32, num_hidden_layers=2, num_hidden_groups=2,
             num_attention_heads=2, intermediate_size=32, local_attention=16)


def plm_run(data_dir, out, **kw) -> PretrainConfig:
    values = dict(model_overrides=MICRO, objective={"name": "plm", "perm_size": 16},
                  data=str(data_dir), out=str(out), batch_size=8, micro_batch_size=8,
                  max_steps=6, warmup_steps=2, lr=0.01, log_every=1, eval_every=6,
                  save_every=3, keep_last=2, eval_instances=16, compile="false")
    return load_run_config("modernbert-tiny-cpu", {**values, **kw})


def test_plm_pretrains_modernbert_exports_it_and_resumes_bit_for_bit(plm_data, tmp_path):
    """Six steps: the loss falls, the export (litebert's layout) loads with
    AutoModelForPreTraining to the last checkpoint's logits; with the checkpoint of step 6
    removed, the run resumes from step 3 to the same losses and weights."""
    result = pretrain(plm_run(plm_data, tmp_path / "run"))
    straight, _ = read_metrics(tmp_path / "run")
    losses = [x["plm_loss"] for x in straight]
    assert len(losses) == 6 and all(map(math.isfinite, losses)) and losses[-1] < losses[0]
    assert 0.0 <= result["eval_plm_accuracy"] <= 1.0
    export = tmp_path / "run" / "export"
    assert json.loads((export / "config.json").read_text())["model_type"] == "litebert"
    loaded = litebert.AutoModelForPreTraining.from_pretrained(export).eval()
    assert type(loaded) is EncoderForPermutationLM
    weights, _ = load_model_state(checkpoint.latest(tmp_path / "run"))
    trained = EncoderForPermutationLM(loaded.config).eval()
    trained.load_state_dict(weights)
    _, perm = order(length=64)
    x = torch.randint(6, loaded.config.vocab_size, (B, 64))
    target = torch.tensor([[5, 40]] * B)
    with torch.no_grad():
        torch.testing.assert_close(
            loaded(x, perm_mask=perm, target_positions=target).logits,
            trained(x, perm_mask=perm, target_positions=target).logits, **EXACT)
    shutil.rmtree(checkpoint.list_checkpoints(tmp_path / "run")[-1])
    assert checkpoint.step_of(checkpoint.latest(tmp_path / "run")) == 3
    pretrain(plm_run(plm_data, tmp_path / "run", resume="auto"))
    resumed, _ = read_metrics(tmp_path / "run")
    assert [x["loss"] for x in resumed] == [x["loss"] for x in straight]
    assert checkpoint.step_of(checkpoint.latest(tmp_path / "run")) == 6
    again, _ = load_model_state(checkpoint.latest(tmp_path / "run"))
    assert all(torch.equal(weights[k], again[k]) for k in weights)
