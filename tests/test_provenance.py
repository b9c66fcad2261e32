"""Where each value of a merged config came from, and errors that name it (litebert.provenance)."""

from __future__ import annotations

import pytest

from litebert.provenance import DEFAULT, FILE, FLAG, GIVEN, SET, FieldError, Provenance, Source


@pytest.mark.parametrize(("source", "field", "value", "spelled"), [
    (Source(FLAG, "--max-steps", "max_steps"), "max_steps", -5, "--max-steps -5"),
    (Source(FLAG, "--fsdp", "fsdp"), "fsdp", False, "--no-fsdp"),
    (Source(FLAG, "--betas", "betas"), "betas", (0.9, 2.0), "--betas 0.9 2.0"),
    (Source(FLAG, "--objective", "objective.name"), "objective.name", "electro",
     "--objective electro"),
    (Source(SET, key="max_steps"), "max_steps", -5, "--set max_steps=-5"),
    (Source(SET, key="phases"), "phases.2.lr", -1.0, "--set phases=...: phases.2.lr=-1.0"),
    (Source(SET, key="betas"), "betas", [1], "--set betas=[1]"),
    (Source(FILE, "recipe r.yaml"), "lr", "fast", "recipe r.yaml: lr='fast'"),
    (Source(GIVEN, "the overrides", "lr"), "lr", 0.0, "the overrides: lr=0.0"),
    (Source(DEFAULT), "micro_batch_size", 32, "the default micro_batch_size=32"),
])
def test_each_source_spells_a_value_as_it_was_given(source, field, value, spelled):
    assert source.spell(field, value) == spelled


def test_only_flags_set_and_the_callers_overrides_are_explicit():
    assert [Source(kind).explicit for kind in (FLAG, SET, GIVEN, FILE, DEFAULT)] == [
        True, True, True, False, False]


def test_a_field_takes_its_own_source_else_the_nearest_that_holds_it_else_the_default():
    provenance = Provenance()
    recipe, flag = Source(FILE, "recipe r.yaml"), Source(FLAG, "--lr", "lr")
    provenance.record({"phases": [{"steps": 3}], "objective": {"temperature": 2.0}}, recipe)
    provenance.record({"lr": -1.0}, flag)
    provenance.record({"phases.2.data": "d"}, Source(SET, key="phases.2.data"))
    assert provenance.source_of("lr") is flag
    assert provenance.source_of("phases.2.lr") is recipe  # inside the recipe's plan
    assert provenance.source_of("phases.2.data").kind == SET
    assert provenance.source_of("objective.temperature") is recipe
    # A mapping's keys are recorded one by one: a key it did not give is the default's.
    assert provenance.source_of("objective.mask_prob").kind == DEFAULT
    assert provenance.explicit("lr") and not provenance.explicit("phases.1.steps")


def test_blame_starts_where_the_value_came_from_and_names_the_related_ones():
    provenance = Provenance()
    provenance.record({"warmup_steps": 700}, Source(FLAG, "--warmup-steps", "warmup_steps"))
    provenance.record({"max_steps": 600}, Source(FILE, "recipe r.yaml"))
    err = FieldError("warmup_steps", 700, "must lie in [0, max_steps=600]",
                     related={"max_steps": 600})
    assert provenance.blame(err) == ("--warmup-steps 700: must lie in [0, max_steps=600] "
                                     "(recipe r.yaml: max_steps=600)")
    assert str(err) == "warmup_steps=700: must lie in [0, max_steps=600]"  # no sources known


def test_renamed_keeps_the_class_and_label_and_drops_what_is_no_field_there():
    class Special(FieldError):
        pass

    err = Special("lr", -1.0, "must be positive", {"max_steps": 3, "warmup_steps": 1}, "cfg")
    moved = err.renamed(lambda f: None if f == "max_steps" else f"phases.2.{f}", "in phase 2: ")
    assert type(moved) is Special and moved.label == "cfg"
    assert (moved.field, moved.why) == ("phases.2.lr", "in phase 2: must be positive")
    assert moved.related == {"phases.2.warmup_steps": 1}
    assert str(moved) == "cfg phases.2.lr=-1.0: in phase 2: must be positive"
