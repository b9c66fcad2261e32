"""The contrastive loss of sentence embeddings with in-batch negatives, across ranks, and its
memory-bounded form (GradCache).

The loss (`in_batch_loss`) is sentence-transformers' MultipleNegativesRankingLoss (InfoNCE
with a scale): each anchor scores every positive of the batch and every hard negative by
scale x cosine; the loss is the cross-entropy of those scores with the anchor's own positive
as the target, averaged over the anchors (tests/tasks/test_contrastive.py compares the two).

Under torchrun the batch is the global one: every rank embeds its rows (runtime.rank_rows),
the embeddings are gathered from every rank (`gather_rows`), and every rank computes the one
global loss, in which only its own rows carry a gradient. The gradient of the parameters on
a rank is then the global loss's gradient through that rank's rows; their sum over the ranks
is the whole gradient, and DDP averages, so the loss is scaled by the world size before the
backward. Two processes give one process's loss and weights.

GradCache (Gao et al. 2021, "Scaling Deep Contrastive Learning Batch Size under Memory
Limited Setup"), `chunk_size` rows at a time: embed every chunk without a graph, compute the
loss on the detached embeddings and its gradient with respect to them, then run each chunk
again with a graph and backpropagate the cached gradient through it. The parameters get the
gradient of the unchunked loss while the activations of one chunk at a time are kept. Each
chunk's random state (dropout) is saved before its first run and restored for the second,
so both runs draw the same masks. Under DDP every chunk but the last runs under no_sync():
the gradients accumulate locally and the last backward all-reduces them once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from litebert.distributed import unwrap

Batch = dict[str, torch.Tensor]


def in_batch_loss(anchors: torch.Tensor, positives: torch.Tensor,
                  negatives: torch.Tensor | None = None, scale: float = 20.0) -> torch.Tensor:
    """anchors (N, H), positives (N, H), hard negatives (M, H) or None -> () the mean over
    the anchors of cross-entropy(scale * cos(anchor, candidates)), anchor i's target being
    positive i; the candidates are all positives, then all negatives."""
    candidates = positives if negatives is None else torch.cat([positives, negatives])
    scores = scale * F.normalize(anchors, dim=-1) @ F.normalize(candidates, dim=-1).T
    return F.cross_entropy(scores, torch.arange(len(anchors), device=anchors.device))


def gather_rows(local: torch.Tensor, sizes: Sequence[int] | None = None) -> torch.Tensor:
    """Every rank's rows (n_r, H) concatenated in rank order, (sum n_r, H); this rank's are
    `local` itself (they carry its gradient), the others' are copies without one. `sizes`:
    every rank's n_r (runtime.rank_sizes: each rank knows them from the batch, so no
    collective and no host sync is spent learning them; 0 included). `local` without a
    process group."""
    if not dist.is_initialized() or dist.get_world_size() == 1:
        return local
    if sizes is None:
        raise ValueError("gather_rows under a process group needs every rank's row count")
    rank = dist.get_rank()
    padded = local.new_zeros((max(sizes), *local.shape[1:]))  # all_gather takes equal shapes
    padded[:len(local)] = local.detach()
    parts = [torch.empty_like(padded) for _ in sizes]
    dist.all_gather(parts, padded)
    rows = [part[:size] for part, size in zip(parts, sizes, strict=True)]
    rows[rank] = local
    return torch.cat(rows)


def global_loss(columns: Sequence[torch.Tensor], own: bool, scale: float,
                sizes: Sequence[int] | None = None) -> torch.Tensor:
    """The loss of the global batch from this rank's embeddings of each column (anchors,
    positives, hard negatives if any; (n, H) each). own False: this rank holds no row of the
    batch (runtime.rank_rows gave it weight 0) and adds none, yet its embeddings stay in the
    graph with a zero gradient, so that it joins DDP's all-reduce."""
    gathered = [gather_rows(x if own else x[:0], sizes) for x in columns]
    loss = in_batch_loss(gathered[0], gathered[1], gathered[2] if len(gathered) > 2 else None,
                         scale)
    if own:
        return loss
    return loss + sum((x * 0.0).sum() for x in columns)


@dataclass
class ContrastiveStep:
    """How one rank runs its share of a global batch: the model (DDP's or not), its autocast
    and gradient scaler, the loss's scale, GradCache's chunk size (None: off) and the
    factor the loss is multiplied by before the backward (the world size, see above)."""

    model: nn.Module
    scale: float = 20.0
    chunk_size: int | None = None
    factor: float = 1.0
    amp: contextlib.AbstractContextManager | None = None
    scaler: torch.amp.GradScaler | None = None
    sizes: Sequence[int] | None = None  # every rank's rows of the batch (gather_rows)

    def backward(self, columns: Sequence[Batch], own: bool = True) -> torch.Tensor:
        """Forward(s) and backward(s) of this rank's rows, one batch per column; the global
        loss, detached. Gradients are left in the parameters (.grad)."""
        if self.chunk_size:
            return self._cached(columns, own)
        with self._amp():
            embeddings = [self.model(**batch) for batch in columns]  # (n, H) each
        loss = global_loss(embeddings, own, self.scale, self.sizes)
        self._backward(loss * self.factor)
        return loss.detach()

    def _cached(self, columns: Sequence[Batch], own: bool) -> torch.Tensor:
        chunks = [(c, part) for c, batch in enumerate(columns)
                  for part in split_rows(batch, self.chunk_size or len(batch["input_ids"]))]
        states, pieces = [], []
        plain = unwrap(self.model)  # no graph, no DDP: nothing to reduce, no collective
        with torch.no_grad():
            for _, part in chunks:
                states.append(RngState.capture(part["input_ids"].device))
                with self._amp():
                    pieces.append(plain(**part))  # (c, H), float32 whatever the autocast
        leaves = [torch.cat([p for (c, _), p in zip(chunks, pieces, strict=True) if c == col])
                  .requires_grad_() for col in range(len(columns))]
        loss = global_loss(leaves, own, self.scale, self.sizes)
        # The gradient of the loss with respect to this rank's embeddings: no parameters here.
        (loss * self.factor).backward()
        cached = [g for col, leaf in enumerate(leaves) for g in _chunk_grads(leaf, chunks, col)]
        for i, ((_, part), state, grad) in enumerate(zip(chunks, states, cached, strict=True)):
            last = i == len(chunks) - 1
            with self._sync(last), state.restored():
                with self._amp():
                    embedded = self.model(**part)  # (c, H), the first run's
                self._backward((embedded * grad).sum())
        return loss.detach()

    def _amp(self) -> contextlib.AbstractContextManager:
        return self.amp if self.amp is not None else contextlib.nullcontext()

    def _sync(self, last: bool) -> contextlib.AbstractContextManager:
        """DDP's no_sync() for every chunk but the last."""
        if last or not isinstance(self.model, nn.parallel.DistributedDataParallel):
            return contextlib.nullcontext()
        return self.model.no_sync()

    def _backward(self, value: torch.Tensor) -> None:
        (self.scaler.scale(value) if self.scaler is not None else value).backward()


def split_rows(batch: Batch, size: int) -> Iterator[Batch]:
    """The batch `size` rows at a time (the padded width kept)."""
    n = len(batch["input_ids"])
    for start in range(0, n, size):
        yield {k: v[start:start + size] for k, v in batch.items()}


def _chunk_grads(leaf: torch.Tensor, chunks: Sequence[tuple[int, Batch]],
                 column: int) -> list[torch.Tensor]:
    """Column `column`'s embedding gradient (n, H) cut as its chunks cut its rows."""
    sizes = [len(part["input_ids"]) for c, part in chunks if c == column]
    grad = leaf.grad if leaf.grad is not None else torch.zeros_like(leaf)
    return list(grad.split(sizes))


@dataclass
class RngState:
    """The random state of the CPU and of the chunk's CUDA device, to run a chunk twice
    with the same dropout masks."""

    cpu: torch.Tensor
    cuda: torch.Tensor | None
    device: torch.device

    @classmethod
    def capture(cls, device: torch.device) -> RngState:
        cuda = torch.cuda.get_rng_state(device) if device.type == "cuda" else None
        return cls(torch.get_rng_state(), cuda, device)

    @contextlib.contextmanager
    def restored(self) -> Iterator[None]:
        """This state inside, the caller's again after (fork_rng keeps it)."""
        devices = [self.device] if self.cuda is not None else []
        with torch.random.fork_rng(devices=devices):
            torch.set_rng_state(self.cpu)
            if self.cuda is not None:
                torch.cuda.set_rng_state(self.cuda, self.device)
            yield
