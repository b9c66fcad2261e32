"""The study's children (studies/lite_vs_bert/children.py) are forked from a server that
imported the modules they run: a child finds them imported without importing them itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from litebert.studies.lite_vs_bert.children import start_method

ROOT = Path(__file__).resolve().parents[2]
STUDY = "litebert.studies.lite_vs_bert.activations"
# A fresh interpreter, so that its server starts with this module named (a server this test
# process started before keeps the imports it started with).
FRESH = f"""
import json
from litebert.studies.lite_vs_bert.children import child_context
from tests.helpers import children
ctx = child_context({STUDY!r})
with ctx.Pool(1) as pool:
    print(json.dumps(pool.apply(children.imported, ([{STUDY!r}, "torch"],))))
"""


def test_a_child_starts_with_the_named_modules_imported_by_the_server():
    assert start_method() == "forkserver"  # Linux, where the study runs
    run = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True,
                         cwd=ROOT, timeout=300,
                         env={**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"})
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout) == [STUDY, "torch"]  # the probe imports neither
