"""What objectives' evaluations share: named sums, the one held-out loop, and evaluation
modules that know only their own objective."""

from __future__ import annotations

import ast
from pathlib import Path

import torch

import litebert.objectives
from litebert.distributed import DistInfo
from litebert.objectives.evaluation import EvalSums, heldout_batches, majority_share, ratio

CPU = torch.device("cpu")
PACKAGE = Path(litebert.objectives.__file__).parent


def test_sums_are_named_whatever_the_order_they_are_added_in():
    a, b = EvalSums(CPU), EvalSums(CPU)
    a.add(loss=torch.tensor(1.5), count=3)
    a.add(loss=torch.tensor(0.5), count=1, correct=torch.tensor(2))
    b.add(correct=2, count=4)
    b.add(loss=2.0)
    assert a.reduce() == b.reduce() == {"correct": 2.0, "count": 4.0, "loss": 2.0}
    assert EvalSums(CPU).reduce() == {}
    assert ratio(0, 0) == 0 and ratio(1, 4) == 0.25 and majority_share(1, 4) == 0.75


class Items:
    """A dataset of `n` one-token items."""

    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": torch.tensor([i])}

    def collate(self, items):
        return {"input_ids": torch.cat([x["input_ids"] for x in items])}


def test_every_rank_gets_as_many_held_out_batches_and_none_repeats():
    ranks = [DistInfo(rank, 3, rank, CPU) for rank in range(3)]
    seen = [[b["input_ids"].tolist() for b in heldout_batches(Items(23), 20, 4, info)]
            for info in ranks]
    assert len({len(s) for s in seen}) == 1  # FSDP: every rank runs as many forwards
    flat = [i for s in seen for batch in s for i in batch]
    assert sorted(flat) == list(range(18))  # 20 asked, 6 per rank, none twice


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_each_evaluation_module_knows_only_its_own_objective():
    """The MLM evaluation held ELECTRA branches and the ELECTRA directory evaluation imported
    the ELECTRA objective's module; now each is its objective's, and nothing outside
    objectives/ reaches into one objective's module by its path."""
    # ELECTRA's generator is a masked LM: its evaluation may use MLM's head check.
    own = {"mlm_eval.py": ("mlm",), "electra_eval.py": ("electra", "mlm_eval"),
           "evaluation.py": ()}
    for name, allowed in own.items():
        modules = imported_modules(PACKAGE / name)
        others = {m for m in modules if m.startswith("litebert.objectives.")
                  and m.rsplit(".", 1)[1] in ("mlm", "electra", "mlm_eval", "electra_eval")
                  and not any(a in m.rsplit(".", 1)[1] for a in allowed)}
        assert others == set(), (name, others)
        text = (PACKAGE / name).read_text(encoding="utf-8")
        if name == "mlm_eval.py":
            assert "rtd" not in text.lower() and "generator" not in text  # no RTD branches
    for user in ("train/pretrain.py", "train/state.py", "studies/runner.py", "cli.py"):
        modules = imported_modules(PACKAGE.parent / user)
        assert not any(m.startswith("litebert.objectives.") and m.count(".") > 1
                       for m in modules), user  # only the registry's API, never a module
