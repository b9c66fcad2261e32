"""A run in phases: the plan a recipe's `phases:` list spells, as configs.

    phases:
      - {steps: 900000}                              # the recipe's fields, --data's directory
      - {steps: 100000, data: data/512, micro_batch_size: 16}

Each entry is a phase: its `steps` and the fields it changes (PHASE_FIELDS), over the
fields of the phase before it (the first over the recipe's own); the run's max_steps is the
sum. `phase_config` is the plain config of one phase, what its Trainer runs: max_steps is
the step the phase ends at, counted from the start of the run.

Which entries must name what: every phase after the first names its `data` (it reads that
data from its first item, litebert.train.phased_run), since a phase that silently kept the
previous directory would read its first items again; a built-in recipe leaves it to the
command line (--set phases.2.data=DIR), and a run without it stops before training.
`reset_optimizer: true` starts the phase with fresh optimizer moments; by default they
carry on.

The learning-rate schedule runs over segments of phases: a phase that names none of
SCHEDULE_FIELDS continues the schedule of the phase before it (one curve over both, as
BERT's second phase continued its decay); a phase that names any starts a schedule of its
own, warm-up and decay over the steps of the segment it begins (itself and the phases after
it that name none). A plan without schedule fields in its phases is one schedule over the
whole run, exactly as without phases.

This module is config alone (no torch, no files); where a phased run starts and how it
trains: litebert.train.phase_start and litebert.train.phased_run.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

from litebert.provenance import FieldError

# The fields a phase may change. None of them changes a parameter's shape (model_overrides
# are checked for that before training, phased_run.check_phases).
PHASE_FIELDS = ("data", "batch_size", "micro_batch_size", "lr", "warmup_steps", "schedule",
                "power", "decay_steps", "model_overrides")
ENTRY_KEYS = ("steps", *PHASE_FIELDS, "reset_optimizer")
SCHEDULE_FIELDS = ("lr", "warmup_steps", "schedule", "power", "decay_steps")
# How a phase runs, not what it trains: a moved directory, the batch split otherwise.
HOW_FIELDS = ("data", "micro_batch_size")
NEW_PHASE_CHOICES = ("true", "false", "reset-optimizer")
DOTTED = re.compile(r"phases\.(\d+)\.(\w+)$")  # --set phases.N.FIELD=VALUE, N from 1


def steps_of(cfg: Any) -> list[int]:
    return [int(entry["steps"]) for entry in cfg.phases]


def bounds(cfg: Any) -> list[tuple[int, int]]:
    """(first step, end step) of each phase: phase k trains steps start + 1 .. end."""
    out, start = [], 0
    for steps in steps_of(cfg):
        out.append((start, start + steps))
        start += steps
    return out


def phase_at(cfg: Any, step: int) -> int:
    """The phase a run that has taken `step` steps trains in next: a step at a phase's end
    begins the next one (the last phase holds the run's end)."""
    ends = [end for _, end in bounds(cfg)]
    return next((k for k, end in enumerate(ends) if step < end), len(ends) - 1)


def starts_schedule(cfg: Any, k: int) -> bool:
    """Whether phase k begins a schedule of its own (the first always does)."""
    return k == 0 or any(name in cfg.phases[k] for name in SCHEDULE_FIELDS)


def segment(cfg: Any, k: int) -> tuple[int, int]:
    """(first phase, steps) of the schedule segment phase k trains in."""
    first = max(i for i in range(k + 1) if starts_schedule(cfg, i))
    last = first
    while last + 1 < len(cfg.phases) and not starts_schedule(cfg, last + 1):
        last += 1
    steps = steps_of(cfg)
    return first, sum(steps[first:last + 1])


def phase_fields(cfg: Any, k: int) -> dict[str, Any]:
    """The fields phase k changes from the run's top level: each entry's over the one
    before, model_overrides merged key by key; data is the entry's own after the first
    (None where it names none: phased_run.check_phases refuses that before training)."""
    fields: dict[str, Any] = {} if k == 0 else {"data": None}
    for entry in cfg.phases[:k + 1]:
        for name in PHASE_FIELDS:
            if name == "model_overrides" and name in entry:
                base = fields.get(name, cfg.model_overrides)
                fields[name] = {**base, **(entry[name] or {})}
            elif name in entry:
                fields[name] = entry[name]
    return fields


def phase_config(cfg: Any, k: int) -> Any:
    """The plain config phase k of `cfg` trains with: its fields, max_steps the step it ends
    at, no phases of its own. What its Trainer runs and its checkpoints record."""
    _, end = bounds(cfg)[k]
    return dataclasses.replace(cfg, **phase_fields(cfg, k), max_steps=end, phases=[],
                               new_phase=False)


def model_fields_changed(cfg: Any, after: int, upto: int) -> set[str]:
    """The model fields that phases after..upto (indices, after excluded) name."""
    return {key for entry in cfg.phases[after + 1:upto + 1]
            for key in (entry.get("model_overrides") or {})}


def comparable(phases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries without HOW_FIELDS: what two runs must agree on."""
    return [{k: v for k, v in entry.items() if k not in HOW_FIELDS} for entry in phases]


# ---- checks ---------------------------------------------------------------------------------

def check_plan(cfg: Any) -> None:
    """FieldError naming the phase's field (phases.N.FIELD, or the run's field a phase
    inherits) when an entry is malformed, or when a phase's config or its schedule segment
    would not hold (warm-up or decay longer than the steps they span)."""
    if not isinstance(cfg.phases, list):
        raise FieldError("phases", cfg.phases, "give a list of mappings, e.g. [{steps: 900}, "
                                               "{steps: 100, data: DIR}]")
    for k, entry in enumerate(cfg.phases):
        check_entry(entry, k)
    for k in range(len(cfg.phases)):
        start, end = bounds(cfg)[k]
        try:
            phase_config(cfg, k)
        except FieldError as err:
            raise err.renamed(_namer(cfg, k), f"in phase {k + 1} (steps {start + 1} to "
                                              f"{end}): ") from None
        except ValueError as err:
            raise ValueError(f"phase {k + 1} (steps {start + 1} to {end}): {err}") from None
        if starts_schedule(cfg, k):
            _check_segment(cfg, k)


def _namer(cfg: Any, k: int) -> Callable[[str], str | None]:
    """A field of phase k's config -> where the plan gives it: phases.N.FIELD of the last
    entry up to k that names it, else the run's own field; None for max_steps, which a
    phase's config counts for it (its end, or its schedule's steps)."""
    def name(field: str) -> str | None:
        if field == "max_steps":
            return None
        named = [i for i in range(k + 1) if field in cfg.phases[i]]
        return f"phases.{named[-1] + 1}.{field}" if named else field
    return name


def _check_segment(cfg: Any, k: int) -> None:
    """The schedule phase k begins must fit the steps of its segment."""
    _, steps = segment(cfg, k)
    try:
        dataclasses.replace(cfg, **phase_fields(cfg, k), max_steps=steps, phases=[],
                            new_phase=False)
    except FieldError as err:
        raise err.renamed(_namer(cfg, k), f"phase {k + 1} begins a schedule over {steps} "
                                          f"steps, which does not hold: ") from None
    except ValueError as err:
        raise ValueError(f"phase {k + 1} begins a schedule over {steps} steps, which does not "
                         f"hold ({err})") from None


def check_entry(entry: Any, k: int) -> None:
    """One entry's own form: a mapping of ENTRY_KEYS with positive whole steps."""
    where = f"phases.{k + 1}"
    if not isinstance(entry, dict):
        raise FieldError(where, entry, "not a mapping; write {steps: N, FIELD: VALUE, ...}")
    unknown = sorted(set(entry) - set(ENTRY_KEYS))
    if unknown:
        raise FieldError(f"{where}.{unknown[0]}", entry[unknown[0]],
                         f"unknown field(s) {', '.join(unknown)} of phase {k + 1}; a phase "
                         f"gives steps and may change {', '.join(ENTRY_KEYS[1:])}")
    steps = entry.get("steps")
    if not isinstance(steps, int) or isinstance(steps, bool) or steps <= 0:
        raise FieldError(f"{where}.steps", steps, "give the phase's number of steps, a whole "
                                                  "number above 0")
    if not isinstance(entry.get("model_overrides") or {}, dict):
        raise FieldError(f"{where}.model_overrides", entry["model_overrides"],
                         "give a mapping of model fields")
    if not isinstance(entry.get("reset_optimizer", False), bool):
        raise FieldError(f"{where}.reset_optimizer", entry["reset_optimizer"],
                         "give true or false")
    if k == 0 and entry.get("reset_optimizer"):
        raise FieldError(f"{where}.reset_optimizer", True, "the first phase has no optimizer "
                                                           "state to reset")


def new_phase_setting(value: Any) -> bool | str:
    """--new-phase as given: False (off), True (keep the optimizer's moments) or
    'reset-optimizer'."""
    if value is None or isinstance(value, bool):
        return bool(value)
    text = str(value).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    if text == "reset-optimizer":
        return text
    raise FieldError("new_phase", value, "choose true, false or reset-optimizer")


# ---- from a recipe and its overrides --------------------------------------------------------

def prepare(values: dict[str, Any], given: dict[str, Any], where: str) -> None:
    """In place, before the config is built: `phases.N.FIELD` overrides set into the plan,
    max_steps the plan's sum, and a --max-steps alone scales a recipe's phases to it (their
    steps by largest remainders, their warm-ups and decays in proportion)."""
    dotted = {k: given.pop(k) for k in list(given) if DOTTED.match(k)}
    own = "phases" in given  # a plan of the overrides' own is not scaled: it says its steps
    plan = given.get("phases", values.get("phases"))
    if dotted:
        plan = _set_dotted(plan, dotted, where)
        given["phases"] = plan
    if not plan or not isinstance(plan, list):
        return
    total = _total(plan, where)
    recipe_steps = values.get("max_steps")
    if "phases" in values and recipe_steps is not None and recipe_steps != _total(
            values["phases"], where):
        raise ValueError(f"{where}: max_steps={recipe_steps} but its phases' steps sum to "
                         f"{_total(values['phases'], where)}; leave max_steps out, it is "
                         f"their sum")
    if "phases" in values:
        values["max_steps"] = _total(values["phases"], where)
    wanted = given.get("max_steps")
    if wanted is not None and wanted != total and not own:
        given["phases"] = scale(plan, total, wanted)
    elif wanted is not None and wanted != total:
        raise FieldError("max_steps", wanted, f"the phases given sum to {total} steps; give "
                                              f"one of the two", related={"phases": plan})


def _total(plan: list[Any], where: str) -> int:
    try:
        return sum(int(entry["steps"]) for entry in plan)
    except (TypeError, KeyError, ValueError):
        raise ValueError(f"{where}: every phase needs its steps: {plan!r}") from None


def _set_dotted(plan: Any, dotted: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """`phases.N.FIELD=VALUE` overrides into a copy of the plan (N counts from 1)."""
    out = [dict(entry) for entry in plan or []]
    for key, value in dotted.items():
        match = DOTTED.match(key)
        assert match is not None
        number, name = int(match.group(1)), match.group(2)
        if not 1 <= number <= len(out):
            raise ValueError(f"--set {key}: {where} has {len(out)} phase(s); number them "
                             f"from 1")
        if name not in ENTRY_KEYS:
            raise ValueError(f"--set {key}: a phase has no field {name!r}; it gives "
                             f"{', '.join(ENTRY_KEYS)}")
        out[number - 1][name] = value
    return out


def scale(plan: list[dict[str, Any]], total: int, wanted: int) -> list[dict[str, Any]]:
    """The plan at `wanted` steps in all: each phase its share (largest remainders), its own
    warm-up and decay in proportion, rounded half up."""
    steps = [int(entry["steps"]) for entry in plan]
    share = [s * wanted // total for s in steps]
    order = sorted(range(len(steps)), key=lambda i: -(steps[i] * wanted % total))
    for i in order[:wanted - sum(share)]:
        share[i] += 1
    if min(share) == 0:
        raise FieldError("max_steps", wanted, f"leaves phase {share.index(0) + 1} no step of "
                                              f"the plan's {steps}; give more steps")
    out = []
    for entry, old, new in zip(plan, steps, share, strict=True):
        entry = {**entry, "steps": new}
        for name in ("warmup_steps", "decay_steps"):
            if entry.get(name):
                entry[name] = _in_proportion(entry[name], old, new)
        out.append(entry)
    return out


def _in_proportion(value: int, steps: int, new: int) -> int:
    """value * new / steps rounded half up, in integers (train.schedule.resolve_warmup's)."""
    return (2 * value * new + steps) // (2 * steps)
