"""XLNet inputs in its layout (A <sep> B <sep> <cls>, left padding, perm_mask, targets) and
the cases the parity tests run."""

from __future__ import annotations

import torch

B, T, P, V = 4, 9, 3, 50


# transformers' "uni" attention cannot take attention_mask or perm_mask with a batch (its
# in-place `attn_mask += data_mask` fails to broadcast): those cases run without them.
CASES = {
    "plain": dict(),
    "left padding": dict(padding=True),
    "perm_mask + targets": dict(padding=True, perm=True, targets=True),
    # (same_length without memories lets each token see itself only: the memory test has it)
    "uni": dict(config=dict(attn_type="uni"), targets=True),
    "bi_data clamp_len": dict(config=dict(bi_data=True, clamp_len=3), padding=True, perm=True,
                              targets=True),
}


def inputs(case: dict, seed: int = 0) -> dict[str, torch.Tensor]:
    """A batch in XLNet's layout: A <sep> B <sep> <cls> (types 0, 1, 2), padding on the left;
    targets with one padding slot (a row of zeros) in row 1."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, V, (B, T), generator=g)
    types = torch.zeros(B, T, dtype=torch.long)
    types[:, 5:] = 1
    types[:, -1] = 2
    x = dict(input_ids=ids, token_type_ids=types)
    if case.get("padding"):
        mask = torch.ones(B, T)
        mask[1, :3] = 0
        mask[2, :1] = 0
        x.update(attention_mask=mask, input_ids=ids.masked_fill(mask == 0, 5),
                 token_type_ids=types.masked_fill(mask == 0, 3))
    if case.get("perm"):
        x["perm_mask"] = (torch.rand(B, T, T, generator=g) < 0.4).float()
    if case.get("targets"):
        mapping = torch.zeros(B, P, T)
        positions = torch.stack([torch.randperm(T - 3, generator=g)[:P] + 3 for _ in range(B)])
        mapping.scatter_(2, positions[:, :, None], 1.0)
        mapping[1, 2] = 0  # a padding slot
        x["target_mapping"] = mapping
    return x
