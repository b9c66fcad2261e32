"""Sentence(-pair) classification or regression labels: the label set of a table's examples
(read by tasks/tables.py), in a stable order, and whether the labels are scores to regress."""

from __future__ import annotations

import math
from collections.abc import Iterable

from litebert.tasks.examples import TextExample

# is_regression: numeric labels with more distinct values than this read as scores; fewer
# read as classes (0/1, 1-5 stars). Override with is_regression(..., regression=True/False).
REGRESSION_MIN_VALUES = 10


def infer_labels(examples: Iterable[TextExample]) -> list[str]:
    """The distinct labels as strings, sorted; numerically when all are integers (so "10"
    follows "9"), else as strings. Unlabeled examples (label None) are left out."""
    return sorted_labels({str(ex.label) for ex in examples if ex.label is not None})


def sorted_labels(labels: Iterable[str]) -> list[str]:
    """Label strings in infer_labels' order: numerically when all are integers, else as
    strings; duplicates once."""
    labels = set(labels)
    if all(_is_int(x) for x in labels):
        return sorted(labels, key=lambda x: (int(x), x))
    return sorted(labels)


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def is_regression(examples: Iterable[TextExample], *, regression: bool | None = None) -> bool:
    """Whether the labels are scores to regress rather than classes.

    `regression` True/False decides outright. Otherwise: True when the labels are floats
    already (GLUE's STS-B), or when every label parses as a finite number and there are more
    than REGRESSION_MIN_VALUES distinct values; so 0/1 or 1-5 star ratings stay classes, and a
    score column with few distinct values needs regression=True.
    """
    if regression is not None:
        return regression
    labels = [ex.label for ex in examples if ex.label is not None]
    if not labels:
        return False
    if all(isinstance(x, float) for x in labels):
        return True
    values = set()
    for x in labels:
        try:
            value = float(x)
        except (TypeError, ValueError):
            return False
        if not math.isfinite(value):
            return False
        values.add(value)
    return len(values) > REGRESSION_MIN_VALUES
