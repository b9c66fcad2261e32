"""One report type for every input reader: what was read, and what was skipped or repaired.

Readers never stop at a bad row and never drop one silently: they `note(kind, where, why)`
it. A kind is declared once per reader family (`KINDS`: name -> `Kind(action, what)`) and is
either skipped (the row, question or file is left out), repaired (kept, fixed as described)
or noted (kept as it is; worth knowing). The report counts every kind and keeps the first
examples of each as "file:line: why", so a long job says what it lost and where to look.

The corpus readers (`litebert.readers.CorpusStats`), the task readers
(`litebert.tasks.examples.ReadReport`) and the SQuAD reader
(`litebert.tasks.squad.SquadReport`) all extend `InputReport`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

SKIPPED, REPAIRED, NOTED = "skipped", "repaired", "noted"
MAX_EXAMPLES = 20  # examples kept per kind; the count goes on past it


class Kind(NamedTuple):
    action: str  # SKIPPED, REPAIRED or NOTED
    what: str  # a plural noun phrase for the summary: "malformed JSON lines"


@dataclass
class InputReport:
    """Items read, and per kind of problem: how many, and the first examples.

    A declared kind also reads as an attribute (`report.bad_json_lines`), its count.
    """

    KINDS: ClassVar[dict[str, Kind]] = {}
    unit: ClassVar[str] = "items"  # what `read` counts, for the summary
    max_examples: ClassVar[int] = MAX_EXAMPLES

    path: str = ""
    read: int = 0  # items kept
    counts: dict[str, int] = field(default_factory=dict)  # kind -> how many, in first-seen order
    examples: dict[str, list[str]] = field(default_factory=dict)  # kind -> first "where: why"
    notes: list[str] = field(default_factory=list)  # the same examples, in the order noted

    def note(self, kind: str, where: str, why: str = "") -> None:
        """Count one `kind` at `where` (e.g. "file:12"), keeping `why` while there is room."""
        count = self.counts.get(kind)
        if count is None:
            if kind not in self.KINDS:  # a typo here would otherwise count silently
                raise ValueError(f"{type(self).__name__}: undeclared kind {kind!r}; "
                                 f"declared: {', '.join(self.KINDS)}")
            count = 0
        self.counts[kind] = count + 1
        if count < self.max_examples:
            text = f"{where}: {why}" if why else where
            self.examples.setdefault(kind, []).append(text)
            self.notes.append(text)

    def __getattr__(self, name: str) -> int:
        # Only reached when normal lookup fails: declared kinds read as their counts.
        if name in type(self).KINDS:
            return self.counts.get(name, 0)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def total(self, action: str) -> int:
        """How many notes of the kinds marked `action`."""
        return sum(n for kind, n in self.counts.items() if self.KINDS[kind].action == action)

    @property
    def skipped(self) -> int:
        return self.total(SKIPPED)

    @property
    def repaired(self) -> int:
        return self.total(REPAIRED)

    def problems(self) -> list[str]:
        """One phrase per kind that occurred, e.g. '3 malformed JSON lines'."""
        return [f"{n:,} {self.KINDS[kind].what}" for kind, n in self._ordered()]

    def headline(self) -> str:
        line = (f"{self.path}: read {self.read:,} {self.unit}{self.read_detail()}, "
                f"skipped {self.skipped:,}")
        return line + (f", repaired {self.repaired:,}" if self.repaired else "")

    def read_detail(self) -> str:
        """Said of the items read in the headline, e.g. " (3 impossible)"."""
        return ""

    def summary(self) -> str:
        """The headline, then one line per kind: what happened, how often, the first case."""
        lines = [self.headline()]
        for kind, n in self._ordered():
            action, what = self.KINDS[kind]
            first = self.examples.get(kind)
            lines.append(f"  {action} {n:,} {what}" + (f"; first: {first[0]}" if first else ""))
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (for a manifest or results file): the fields, the totals, and per kind
        its action, description, count and first examples."""
        out = dataclasses.asdict(self)
        for name in ("counts", "examples", "notes"):  # regrouped per kind below
            del out[name]
        out.update(skipped=self.skipped, repaired=self.repaired, kinds={
            kind: {"action": self.KINDS[kind].action, "what": self.KINDS[kind].what,
                   "count": n, "examples": list(self.examples.get(kind, []))}
            for kind, n in self._ordered()})
        return out

    def _ordered(self) -> list[tuple[str, int]]:
        # Declared order, so summaries of different files read alike.
        return [(kind, self.counts[kind]) for kind in self.KINDS if self.counts.get(kind)]
