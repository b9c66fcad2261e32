"""Non-finite steps counted on the device, so that a step never waits for the host to learn
whether its loss was finite; the host reads the counts at log, evaluation and checkpoint
steps (one sync there) and stops a run that diverged.

What a skipped step is: the global batch was drawn and its loss or gradient norm was not
finite, so the optimizer left parameters and moments as they were (on the device). The step
still counts: TrainState.step, the LR schedule and the data position advance as for any
other step (as they always did under fp16's GradScaler), because the host cannot know
without a sync. `max_nonfinite` non-finite steps in a row anywhere since the last read stop
the run at that read (TrainingDiverged): at most `log_every` steps late, and those left the
weights as they were.
"""

from __future__ import annotations

import torch


class SkipCounter:
    """Device counters: skipped steps since the last read, the current run of non-finite
    steps in a row, and the longest such run since the last read."""

    def __init__(self, device: torch.device, in_row: int = 0):
        self.skipped = torch.zeros((), dtype=torch.long, device=device)
        self.in_row = torch.full((), in_row, dtype=torch.long, device=device)
        self.longest = self.in_row.clone()

    def add(self, finite: torch.Tensor) -> None:
        """One step whose loss and gradient norm were `finite` (0-d bool)."""
        bad = (~finite).long()
        self.skipped += bad
        self.in_row = (self.in_row + 1) * bad
        self.longest = torch.maximum(self.longest, self.in_row)

    def read(self) -> tuple[int, int, int]:
        """(skipped since the last read, in a row now, longest in a row since the last read)
        with one host sync; the window's counters start again."""
        skipped, in_row, longest = torch.stack((self.skipped, self.in_row, self.longest)).tolist()
        self.skipped.zero_()
        self.longest.copy_(self.in_row)
        return skipped, in_row, longest
