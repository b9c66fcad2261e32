"""The checkpoint families litebert reads, by config.json's model_type, with the name each
goes by in prose: the registered model packages' titles (litebert.specs). Help texts name
the families from here: reading the specs imports no torch, while litebert.families (the
adapters) does, and building a parser must not. Its tests check that the two list the same
families under the same names."""

from __future__ import annotations

from litebert.specs import OWN_LAYOUT, all_specs

FAMILY_TITLES = {spec.name: spec.title for spec in all_specs() if spec.adapter_module is not None}


def named_families(conjunction: str = "or", *, own: bool = True) -> str:
    """'litebert, ALBERT, BERT, ... or XLNet': every family's name, litebert's own layout
    first (or left out, `own=False`), the last joined by `conjunction`."""
    names = [title for model_type, title in FAMILY_TITLES.items() if model_type != OWN_LAYOUT]
    if own:
        names.insert(0, FAMILY_TITLES[OWN_LAYOUT])
    return f"{', '.join(names[:-1])} {conjunction} {names[-1]}"
