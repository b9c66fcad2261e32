"""What the static step costs where host syncs are free (a CPU): its parts against the
dynamic forms they replaced, interleaved in one process.

- MLM: AlbertForPreTraining's forward + backward scoring P = max_predictions_per_seq slots
  per row (the static form: unused slots weigh 0) against the labels path, which scores
  exactly the masked tokens (a boolean index: a host sync and a new shape every batch).
- LAMB: the step gated on the device by a finite flag (found_inf) against the plain step.

Random ids, `--used` masked tokens per row in every row (bbc-news' rows of 128 mask ~19),
fp32; median of `--steps` after 2 warm-up rounds, the sides alternating.

    python benchmarks/bench_static_step.py [--preset tiny] [--batch 32] [--seq 128]
                                           [--slots 20] [--used 19] [--steps 20]
"""

from __future__ import annotations

import argparse

import torch
from common import describe, interleaved

from litebert.config import ModelConfig
from litebert.model import EncoderForPreTraining
from litebert.train.optimizers import OPTIMIZERS, build_optimizer, step_if

VOCAB = 22057  # bbc-news' tokenizer in the other benchmarks


def mlm_batches(args: argparse.Namespace) -> tuple[dict, dict]:
    """The same masked tokens as (labels) and as (slots): `used` of `slots` per row."""
    g = torch.Generator().manual_seed(0)
    B, T, P = args.batch, args.seq, args.slots
    ids = torch.randint(5, VOCAB, (B, T), generator=g)
    positions = torch.stack([torch.randperm(T, generator=g)[:P].sort().values
                             for _ in range(B)])  # (B, P)
    weights = (torch.arange(P) < args.used).float().expand(B, P)  # (B, P)
    labels = torch.full((B, T), -100).scatter(1, positions[:, :args.used],
                                              ids.gather(1, positions[:, :args.used]))
    common = dict(input_ids=ids, sentence_order_label=torch.zeros(B, dtype=torch.long))
    slots = dict(masked_positions=positions, masked_ids=ids.gather(1, positions),
                 masked_weights=weights)
    return {**common, "labels": labels}, {**common, **slots}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--slots", type=int, default=20, help="P (default 20)")
    parser.add_argument("--used", type=int, default=19, help="masked tokens per row")
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = EncoderForPreTraining(ModelConfig.from_preset(args.preset, vocab_size=VOCAB))
    dynamic, static = mlm_batches(args)

    def forward_backward(batch: dict) -> int:
        model(**batch).loss.backward()
        model.zero_grad(set_to_none=True)
        return args.batch * args.seq

    mlm = interleaved({"labels (dynamic)": lambda: forward_backward(dynamic),
                       "slots (static)": lambda: forward_backward(static)},
                      args.steps, torch.device("cpu"))
    optimizer = build_optimizer("lamb", model, lr=1e-6)
    grads = [torch.randn_like(p) * 1e-3 for p in model.parameters()]

    def lamb(gated: bool) -> int:
        for p, g in zip(model.parameters(), grads, strict=True):
            p.grad = g.clone()
        if gated:
            step_if(OPTIMIZERS["lamb"], optimizer, torch.tensor(True))
        else:
            optimizer.found_inf = None
            optimizer.step()
        return 1
    steps = interleaved({"plain": lambda: lamb(False), "gated on the device": lambda: lamb(True)},
                        args.steps, torch.device("cpu"))
    print(f"{args.preset} preset, batch {args.batch} x {args.seq}, {args.used} of {args.slots} "
          f"slots used per row, vocab {VOCAB:,}, fp32, {describe(torch.device('cpu'))}, "
          f"median of {args.steps}\n")
    print("| part | form | ms per call |\n|---|---|---|")
    for name, rate in mlm.items():
        print(f"| MLM forward + backward | {name} | {args.batch * args.seq / rate * 1e3:,.1f} |")
    for name, rate in steps.items():
        print(f"| LAMB step | {name} | {1e3 / rate:,.2f} |")
    ratio = mlm["labels (dynamic)"] / mlm["slots (static)"]
    print(f"\nstatic MLM step time over dynamic {ratio:.3f}x")


if __name__ == "__main__":
    main()
