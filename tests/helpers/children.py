"""What a child process runs in tests/studies/test_lvb_children.py (it imports it by name)."""

from __future__ import annotations

import sys


def imported(names: list[str]) -> list[str]:
    """Which of `names` this process has imported."""
    return [name for name in names if name in sys.modules]
