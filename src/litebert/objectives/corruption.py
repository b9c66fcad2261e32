"""ELECTRA's corruption of a batch (Clark et al., 2020), as google-research/electra does it.

    original ids (B, T)
      -> slots (B, N): per row k = max(1, min(N, round(mask_prob * real tokens))) positions,
         drawn with replacement among the maskable ones (real tokens other than [CLS], [SEP]
         and [MASK]); N = int((mask_prob + 0.005) * max_seq_length). Or, with the data's
         masks (n-gram / whole-word masking from `data build`), the positions the data
         masked; N = the data's max_predictions_per_seq. Unused slots point at 0, weight 0.
      -> generator input: 85% of the used slots show [MASK], the rest their original token
         (no random replacement: the generator is the one that replaces).
      -> the generator's logits at all N slots; one sample per slot from its softmax at a
         temperature, written into the *original* ids: the discriminator's input.
      -> labels: 1 where the written sample differs from the original (a sample equal to the
         original counts as original).

Every shape is fixed by the batch's (B, T) and N, and nothing is read back to the host
(no boolean indexing, no count of the masked tokens): torch.compile takes it as one graph.
An unused slot is drawn and sampled like a used one (its keyed uniforms cost nothing and
change nothing) and only its weight says it does not count.

Randomness is keyed, not drawn from an RNG stream: every random number of a row is a hash
of (the run's seed, the optimizer step, the row's tokens, the slot). So a row is corrupted
the same way whether it sits in one big batch, in a micro-batch of an accumulated step or on
another rank, and a resumed run corrupts exactly as the uninterrupted one with nothing to
save; evaluation uses a fixed key, so every evaluation scores the same slots.

Where this differs from the official code, deliberately: it writes a position drawn by two
slots as the integer mean of their samples (scatter by sum), here the later slot's sample is
written, a real token; it samples by Gumbel-max, here by the inverse of the softmax's CDF
(the same distribution, one uniform per slot instead of one per vocabulary entry); it drops
position 0 explicitly, here [CLS] is never maskable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import overload

import torch

from litebert.data.loader import masked_slots

IGNORE = -100  # the data's label of a token that is not predicted
MASK_SHOWN = 0.85  # share of the slots whose generator input is [MASK]
PRIME = 2_147_483_647  # 2**31 - 1: keys live in [0, PRIME), products fit in int64
ROUNDS = (1_103_515_245, 48_271, 69_621, 16_807)  # multipliers of the mixing rounds
STREAMS = {"positions": 1, "shown": 2, "sample": 3}  # one key stream per use


@overload
def mix(x: int) -> int: ...
@overload
def mix(x: torch.Tensor) -> torch.Tensor: ...


def mix(x):
    """An int64 tensor (or a Python int) of values in [0, PRIME) -> well-mixed values in
    [0, PRIME): a few rounds of multiply-add modulo a prime and xor-shift. Only exact integer
    arithmetic, so CPU, CUDA and Python ints give the same bits."""
    for a in ROUNDS:
        x = (x * (a % PRIME) + 12_345) % PRIME
        x = x ^ (x >> 15)
    return x


def row_keys(ids: torch.Tensor, real: torch.Tensor, seed: int,
             step: int | torch.Tensor) -> torch.Tensor:
    """(B,) int64: one key per row from (seed, step, the row's real tokens (B, T)). Padding
    is left out, so a row's key does not depend on how far its batch was padded. `step` is
    an int or a 0-d int64 tensor (one compiled graph for every step); the same bits."""
    T = ids.shape[1]
    position = torch.arange(T, device=ids.device)
    token = mix((ids.long() % PRIME * 1009 + position) % PRIME) * real.long()
    content = mix(token.sum(-1) % PRIME)  # (B,)
    run = mix((seed % PRIME) * 7919 % PRIME)  # a Python int: no tensor copied to the device
    return mix((content + mix((run + step % PRIME) % PRIME)) % PRIME)


def uniform(keys: torch.Tensor, n: int, stream: str) -> torch.Tensor:
    """(...,) keys -> (..., n) float32 uniforms in [0, 1), one stream of n per key."""
    base = mix((keys * 613 + STREAMS[stream]) % PRIME)  # (...,)
    index = torch.arange(n, device=keys.device)
    bits = mix((base[..., None] * 4099 + index) % PRIME)  # (..., n)
    return (bits.double() / PRIME).float()


@dataclass
class Slots:
    """Where the generator predicts: N slots per row, some unused."""

    positions: torch.Tensor  # (B, N) long: slot -> position; 0 for an unused slot
    used: torch.Tensor  # (B, N) bool
    targets: torch.Tensor  # (B, N) long: the original id at each slot (0 when unused)
    keys: torch.Tensor  # (B, N) int64: each slot's key, for its [MASK] draw and its sample

    @property
    def weights(self) -> torch.Tensor:
        """(B, N) float: 1 for a used slot, 0 for an unused one."""
        return self.used.float()


def slot_count(max_seq_length: int, mask_prob: float) -> int:
    """N, the most slots per row (the official max_predictions_per_seq for this length)."""
    return max(1, int((mask_prob + 0.005) * max_seq_length))


def original_ids(batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """(B, T) the uncorrupted ids: the data's masked tokens carry their original in labels
    (unmasked items, PretrainingDataset(masked=False), have none)."""
    labels = batch.get("labels")
    if labels is None:
        return batch["input_ids"]
    return torch.where(labels != IGNORE, labels, batch["input_ids"])


def maskable(ids: torch.Tensor, real: torch.Tensor, never: torch.Tensor) -> torch.Tensor:
    """(B, T) bool: real tokens whose id is not in `never` ((S,) ids: [CLS], [SEP], [MASK])."""
    return real.bool() & ~torch.isin(ids, never)


def slots_per_row(real: torch.Tensor, candidates: torch.Tensor, mask_prob: float,
                  max_seq_length: int) -> torch.Tensor:
    """(B,) long: k per row, 0 for a row with nothing maskable. A function of the batch
    alone, so the loop can count the slots of a step before any forward."""
    tokens = real.sum(-1).float()  # (B,)
    N = slot_count(max_seq_length, mask_prob)
    k = torch.round(tokens * mask_prob).clamp(min=1, max=N).long()
    return k * candidates.any(-1).long()


def _slot_keys(keys: torch.Tensor, N: int) -> torch.Tensor:
    """(B,) row keys -> (B, N) slot keys."""
    return mix((keys[:, None] * 8191 + torch.arange(N, device=keys.device)) % PRIME)


def draw_slots(ids: torch.Tensor, candidates: torch.Tensor, k: torch.Tensor, keys: torch.Tensor,
               mask_prob: float, max_seq_length: int) -> Slots:
    """k[b] positions of row b, uniform with replacement among `candidates` (B, T): the
    inverse of the candidates' CDF at one keyed uniform per slot."""
    N = slot_count(max_seq_length, mask_prob)
    used = torch.arange(N, device=ids.device)[None, :] < k[:, None]  # (B, N)
    cdf = candidates.long().cumsum(-1)  # (B, T): candidates up to and including t
    total = cdf[:, -1:].clamp(min=1)  # (B, 1)
    rank = (uniform(keys, N, "positions") * total).long().clamp(max=total - 1)  # (B, N)
    positions = torch.searchsorted(cdf, rank, right=True)  # the (rank+1)-th candidate
    positions = positions.clamp(max=ids.shape[1] - 1) * used
    return Slots(positions, used, ids.gather(1, positions) * used, _slot_keys(keys, N))


def data_slot_counts(labels: torch.Tensor, N: int) -> torch.Tensor:
    """(B,) long: the data's masked tokens per row, at most N (the slots a row has)."""
    return (labels != IGNORE).sum(-1).clamp(max=N)


def data_slots(ids: torch.Tensor, labels: torch.Tensor, keys: torch.Tensor, N: int) -> Slots:
    """The positions the data masked (its n-gram / whole-word spans), packed left in N slots,
    N the data's max_predictions_per_seq (static: no row of the data masks more)."""
    positions, used = masked_slots(labels, N)  # (B, N) each
    return Slots(positions, used, ids.gather(1, positions) * used, _slot_keys(keys, N))


def generator_input(ids: torch.Tensor, slots: Slots, mask_id: int) -> torch.Tensor:
    """(B, T): [MASK] at MASK_SHOWN of the used slots, the original token elsewhere."""
    draw = uniform(slots.keys, 1, "shown")[..., 0]  # (B, N)
    shown = (slots.used & (draw < MASK_SHOWN)).long()  # (B, N)
    # (B, T) 1 where any slot shows [MASK]; an unused slot (at 0) adds nothing
    hit = torch.zeros_like(ids).scatter_reduce(1, slots.positions, shown, reduce="amax")
    return torch.where(hit > 0, mask_id, ids)


def sample(logits: torch.Tensor, keys: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """(M, V) logits, (M,) slot keys -> (M,) ids drawn from softmax(logits / temperature),
    in fp32 whatever the autocast dtype. No gradient flows (the paper's stop-gradient)."""
    probs = torch.softmax(logits.detach().float() / temperature, dim=-1)  # (M, V)
    cdf = probs.cumsum(-1)  # (M, V)
    u = uniform(keys, 1, "sample") * cdf[:, -1:]  # (M, 1): the rounding of cdf's last entry
    return torch.searchsorted(cdf, u, right=True).clamp(max=logits.shape[-1] - 1)[:, 0]


def replace(ids: torch.Tensor, slots: Slots, sampled: torch.Tensor
            ) -> tuple[torch.Tensor, torch.Tensor]:
    """The discriminator's input (B, T) and labels (B, T) float, 1 = replaced, from one
    sample per slot (B, N); an unused slot's sample is never written.

    A position drawn by two slots takes the later used slot's sample, and a position with no
    used slot keeps its id: every slot at a position writes that same value, so the result
    does not depend on the order of the writes (CUDA)."""
    B, N = slots.used.shape
    slot = torch.arange(N, device=ids.device).expand(B, N)
    owner = torch.full_like(ids, -1).scatter_reduce(  # (B, T): the last used slot there
        1, slots.positions, torch.where(slots.used, slot, -1), reduce="amax")
    winner = owner.gather(1, slots.positions)  # (B, N): -1 where no used slot is there
    value = torch.where(winner >= 0, sampled.gather(1, winner.clamp(min=0)),
                        ids.gather(1, slots.positions))  # (B, N)
    fake = ids.scatter(1, slots.positions, value)
    return fake, (fake != ids).float()
