"""`litebert study run lite-vs-bert`: every part of the study, resumably, then the report.

Layout of a study directory OUT:

    study.json            the study's name, whether quick, the plan as run
    parts/<part>.json     one file per part, written when the part finishes; a part whose
                          file exists is not run again, so a killed study continues
    report.md, results.json, speedup.png   (report.py)

The parts, in order: footprint (bytes held per rank, counted), timing (CPU step time),
activations (peak memory per sequence), communication (collectives counted at 2 gloo
processes), link and validation (this machine's gloo link, and the throughput model checked
against 2 processes). Each row's record says whether it was measured or computed.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from litebert.files import atomic_write_json
from litebert.studies.lite_vs_bert.activations import activation_memory, measure_row
from litebert.studies.lite_vs_bert.communication import compare_losses, count_modes
from litebert.studies.lite_vs_bert.footprint import row_footprint
from litebert.studies.lite_vs_bert.gloo_check import SIZES, link_of_this_machine, validate
from litebert.studies.lite_vs_bert.rows import ROWS, row_config, small_overrides
from litebert.studies.lite_vs_bert.throughput import Interconnect, bucket_sizes
from litebert.studies.lite_vs_bert.timing import step_times

log = logging.getLogger("litebert")

NAME = "lite-vs-bert"
TITLE = "ALBERT against BERT: bytes held, bytes sent, compute, and speed at N ranks"
PAPER = "Tables 1-2"
ALL_ROWS = tuple(row.name for row in ROWS)
MEMORY_SHARE = 0.6  # of this machine's memory, for the processes of a count


class LiteVsBertError(ValueError):
    """A bad request or directory for this study; the message says what and where."""


@dataclass(frozen=True)
class Plan:
    """What each part measures. The defaults are the full study (about 25 minutes on two
    cores); `quick` shrinks every row to 2 layers of width 64 (seconds)."""
    rows: tuple[str, ...] = ALL_ROWS
    lengths: tuple[int, ...] = (128, 512)  # activation memory
    timing_rows: tuple[str, ...] = ("albert-base", "bert-base", "albert-large", "bert-large")
    timing_shape: tuple[int, int] = (2, 128)  # (micro-batch, tokens)
    timing_steps: int = 3
    communication_shape: tuple[int, int] = (1, 32)  # bytes do not depend on it
    loss_row: str = "albert-base"  # FSDP's losses against DDP's, 3 steps
    # Where communication is a large share of a CPU step, so the model's comm term shows.
    validation_rows: tuple[str, ...] = ("albert-base", "bert-base")
    validation_shape: tuple[int, int] = (1, 32)
    validation_steps: int = 4
    link_sizes: tuple[int, ...] = SIZES  # all-reduce sizes of the link's fit, bytes
    link_repeats: int = 5
    quick: bool = False

    def overrides(self, name: str) -> dict:
        return small_overrides(name) if self.quick else {}


QUICK = Plan(lengths=(32,), timing_shape=(2, 32), timing_steps=1,
             communication_shape=(1, 16), validation_shape=(1, 16), validation_steps=2,
             link_sizes=SIZES[::2], link_repeats=2, quick=True)  # 4 KiB to 16 MiB


def part_footprint(plan: Plan, done: dict) -> dict:
    return {name: row_footprint(name, **plan.overrides(name)) for name in plan.rows}


def part_timing(plan: Plan, done: dict) -> dict:
    batch, length = plan.timing_shape
    return {name: step_times(name, batch, length, plan.timing_steps, **plan.overrides(name))
            for name in plan.timing_rows if name in plan.rows}


def part_activations(plan: Plan, done: dict) -> dict:
    return {name: measure_row(name, plan.lengths, overrides=plan.overrides(name))
            for name in plan.rows}


DROPOUT = {"hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}
NO_DROPOUT = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
DROPOUT_LAYERS = 3  # enough to show the per-layer cost, seconds a measurement


def part_dropout(plan: Plan, done: dict) -> dict:
    """ALBERT-base and BERT-base at the longest length, with and without dropout (BERT's
    presets train with 0.1, ALBERT's without): how much of BERT's larger activations per
    sequence is dropout's rather than the missing sharing. Each row's own setting was
    measured by the activations part already (at this depth: a shallow depth of its
    extrapolation, or its whole depth when quick); that measurement is reused, named in
    "reused", and only the other setting runs."""
    length = max(plan.lengths)
    layers = None if plan.quick else DROPOUT_LAYERS
    rows = {}
    for name in ("albert-base", "bert-base"):
        shrink = plan.overrides(name)
        depth = layers or shrink["num_hidden_layers"]
        config = row_config(name, **shrink)
        per, reused = {}, []
        for p in (NO_DROPOUT, DROPOUT):
            key = f"dropout {p['hidden_dropout_prob']}"
            before = None
            if all(getattr(config, field) == value for field, value in p.items()):
                before = measured_before(done["activations"].get(name), length, depth)
            if before is not None:
                reused.append(key)
            else:
                before = activation_memory(name, length, layers=layers,
                                           overrides={**shrink, **p})
            per[key] = before["per_sequence_bytes"]
        rows[name] = {**per, "length": length, "layers": depth, "reused": reused}
    return rows


def measured_before(row: dict | None, length: int, layers: int) -> dict | None:
    """The activations part's own measurement of a row (activations.activation_memory's
    result) at `length` tokens and `layers` layers, or None where it measured none: a
    length's result is one, or an extrapolation whose "measured" holds one per depth."""
    at = (row or {}).get("lengths", {}).get(str(length))
    if at is None:
        return None
    found = [at, *at.get("measured", []), *at.get("extrapolated", {}).get("measured", [])]
    return next((m for m in found if "method" not in m and m["layers"] == layers), None)


def machine_memory() -> int:
    """Bytes of memory this machine has (MemTotal), 0 where /proc/meminfo is missing."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def counted_or_computed(plan: Plan, name: str, footprint: dict) -> dict:
    """The collectives of a step counted at 2 processes where both fit in memory (each holds
    the DDP footprint), else the footprint's rule (the report compares rule and count)."""
    if 2 * footprint["ddp"]["total"] > MEMORY_SHARE * machine_memory():
        grads = footprint["ddp"]["grads"]
        log.info("communication %s: computed (two processes would not fit in memory)", name)
        return {"how": "computed: two processes would not fit in this machine's memory",
                "ddp": {"all_reduce": {"calls": len(bucket_sizes(grads)), "bytes": grads}},
                "fsdp": {**footprint["fsdp_step"]}}
    # The per-use count matters only where a unit is shared across depth.
    shared = row_config(name).sharing != "none"
    modes = ("ddp", "fsdp-per-use", "fsdp") if shared else ("ddp", "fsdp")
    batch, length = plan.communication_shape
    log.info("communication %s: %s at 2 gloo processes, %d x %d", name, ", ".join(modes),
             batch, length)
    return {"how": "counted at 2 gloo processes",
            **count_modes(name, modes, batch=batch, length=length,
                          overrides=plan.overrides(name))}


def part_communication(plan: Plan, done: dict) -> dict:
    rows = {name: counted_or_computed(plan, name, done["footprint"][name])
            for name in plan.rows}
    name = plan.loss_row
    if name in plan.rows:
        rows[name]["losses"] = compare_losses(name, overrides=plan.overrides(name))
    return rows


def part_link(plan: Plan, done: dict) -> dict:
    fit = link_of_this_machine(plan.link_sizes, plan.link_repeats)
    return {**fit, "link": dataclasses.asdict(fit["link"])}


def part_validation(plan: Plan, done: dict) -> dict:
    link = Interconnect(**done["link"]["link"])
    batch, length = plan.validation_shape
    return {name: validate(name, batch, length, link, plan.validation_steps,
                           plan.overrides(name))
            for name in plan.validation_rows if name in plan.rows}


PARTS: dict[str, Callable[[Plan, dict], dict]] = {
    "footprint": part_footprint,
    "timing": part_timing,
    "activations": part_activations,
    "dropout": part_dropout,
    "communication": part_communication,
    "link": part_link,
    "validation": part_validation,
}


def run(out: Path, quick: bool = False, only: list[str] | None = None) -> dict[str, dict]:
    """Run (or continue) the study in `out`; {part: its result}. `only`: these rows."""
    plan = QUICK if quick else Plan()
    if only:
        unknown = [name for name in only if name not in ALL_ROWS]
        if unknown:
            raise LiteVsBertError(f"--only {' '.join(unknown)}: not a row of {NAME}; "
                                  f"rows: {', '.join(ALL_ROWS)}")
        plan = dataclasses.replace(plan, rows=tuple(only))
    out = Path(out)
    _write_study(out, plan)
    done: dict[str, dict] = {}
    for i, (part, measure) in enumerate(PARTS.items(), 1):
        path = out / "parts" / f"{part}.json"
        if path.is_file():
            done[part] = json.loads(path.read_text(encoding="utf-8"))["result"]
            log.info("[study] part %d/%d: %s (done before)", i, len(PARTS), part)
            continue
        log.info("[study] part %d/%d: %s", i, len(PARTS), part)
        start = time.perf_counter()
        try:
            done[part] = measure(plan, done)
        except (ValueError, RuntimeError) as err:  # a child process's failure, a bad fit
            raise LiteVsBertError(
                f"{path}: the {part} part failed: {err}. The parts written before it are "
                f"kept; the same command continues from this one") from None
        atomic_write_json(path, {"seconds": time.perf_counter() - start,
                                 "result": done[part]})
    return done


def _write_study(out: Path, plan: Plan) -> None:
    """OUT/study.json; a directory holds one plan, never two mixed."""
    study = {"name": NAME, "title": TITLE, "paper": PAPER, "quick": plan.quick,
             "plan": json.loads(json.dumps(dataclasses.asdict(plan)))}  # tuples as lists
    path = out / "study.json"
    if path.is_file():
        before = json.loads(path.read_text(encoding="utf-8"))
        if before.get("name") != NAME or before.get("plan") != study["plan"]:
            raise LiteVsBertError(f"{path}: this directory holds another study or plan "
                                  f"({before.get('name')}, quick={before.get('quick')}); "
                                  f"use another --out")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, study)
