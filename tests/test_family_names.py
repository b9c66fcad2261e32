"""The light list of family names (litebert.family_names), which help texts name the
families from, against the registry of their adapters (litebert.families)."""

from __future__ import annotations

from litebert.families import FAMILIES
from litebert.family_names import FAMILY_TITLES, named_families


def test_the_names_are_the_registrys_families_and_titles():
    assert FAMILY_TITLES == {model_type: adapter.title for model_type, adapter in FAMILIES.items()}


def test_named_families_lists_every_one_once_and_litebert_first_when_asked():
    titles = [adapter.title for adapter in FAMILIES.values()]
    ours = named_families("or")
    assert ours.startswith("litebert, ") and ours.endswith(" or XLNet")
    assert sorted(ours.replace(" or ", ", ").split(", ")) == sorted(titles)
    theirs = named_families("and", own=False)
    assert "litebert" not in theirs and theirs.count(", ") == len(titles) - 3
    assert theirs.endswith(" and XLNet")
