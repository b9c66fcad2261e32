"""The package's import graph has no cycles, counting imports inside functions too."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import litebert

ROOT = Path(litebert.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_checker_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycles_in_the_package():
    cycle = find_cycle(import_graph())
    assert cycle is None, " -> ".join(cycle)


# ---- packages: one way, bottom to top ---------------------------------------------------------

# The layers of the components (docs/contributing.md): a package may import its own layer's and
# lower ones (never a cycle), never a higher one. A new package or top-level module is placed here.
LAYERS = (
    {"config", "cpus", "files", "options", "provenance", "input_report", "padding", "progress",
     "distributed", "write_errors", "family_names", "specs"},
    {"readers"},
    {"tokenization"},
    {"data", "compat", "packaged_models"},
    {"families", "model", "smoke"},
    {"models"},
    {"objectives"},
    {"train"},
    {"tasks"},
    {"studies", "demo", "demo_plans"},
    {"commands"},
    {"cli", "__main__"},
)


def package_of(module: str) -> str | None:
    """litebert.X.Y -> X; litebert.X (a top-level module) -> X; the package root -> None."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for module, targets in graph.items():
        mine = package_of(module)
        if mine is None:  # litebert/__init__.py: the public API imports everything
            continue
        out.setdefault(mine, set())
        out[mine] |= {p for p in map(package_of, targets) if p not in (None, mine)}
    return out


def layer_violations(packages: dict[str, set[str]]) -> list[str]:
    """Each import of a higher layer ('a -> b'), and each package in no layer."""
    rank = {name: i for i, layer in enumerate(LAYERS) for name in layer}
    problems = [f"{p} is in no layer of LAYERS" for p in sorted(packages) if p not in rank]
    problems += [f"{a} -> {b}" for a in sorted(packages) for b in sorted(packages[a])
                 if a in rank and b in rank and rank[b] > rank[a]]
    return problems


def test_the_layer_checker_finds_an_upward_import_and_a_package_cycle():
    assert layer_violations({"objectives": {"train"}, "train": {"objectives"}}) == [
        "objectives -> train"]
    assert layer_violations({"newpackage": set()}) == ["newpackage is in no layer of LAYERS"]
    assert find_cycle({"data": {"tokenization"}, "tokenization": {"data"}}) is not None


def test_packages_import_one_way():
    """Imports inside functions count: the graph is every import statement's."""
    packages = package_graph(import_graph())
    assert layer_violations(packages) == []
    cycle = find_cycle({p: t & set(packages) for p, t in packages.items()})
    assert cycle is None, " -> ".join(cycle)


def test_the_data_builds_workers_do_not_import_torch():
    """Each worker of `data build` imports the build's modules: torch would cost every one
    of them seconds and about 220 MB. The top-level names are imported when first used."""
    code = ("import sys\n"
            "import litebert.data.builder, litebert.data.splits, litebert.tokenization\n"
            "import litebert.readers, litebert.write_errors\n"
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))\n"
            "import litebert\n"
            "print(litebert.AlbertModel.__module__, 'torch' in sys.modules)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.splitlines() == ["[]", "litebert.models.albert.model True"]



# ---- imports at the top of the module ---------------------------------------------------------

# The commands (cli.py, commands/) import inside themselves by design: a command builds only its
# own group of options and imports only what it runs (`litebert data build` never loads torch
# and the models).
CLI = ("cli.py", "commands/")

# The imports that still sit inside a function, each with its reason: (module's path under
# src/litebert, imported module) -> why. A new one fails the test: move it to the top of its
# module, or add it here with a reason; an entry that no longer matches fails too, so the list
# shrinks as the imports move. Costs were measured on the 2-core CPU machine (max RSS, `time`).
DEFERRED_IMPORTS = {
    # Kept: a process that never needs them would pay for them.
    ("readers/arrow.py", "pyarrow"):
        "pyarrow adds ~35 MB to every `data build` worker, which imports the readers; only an "
        "Arrow or Parquet corpus needs it (import of litebert.data.pass1: 43 vs 78 MB)",
    ("readers/columns.py", "pyarrow"): "as readers/arrow.py",
    ("readers/parquet.py", "pyarrow.parquet"): "as readers/arrow.py",
    ("tokenization/tokenizer.py", "litebert.padding"):
        "padding imports torch, and `data build`'s workers import the tokenizer without torch "
        "(test_the_data_builds_workers_do_not_import_torch)",
    ("train/metrics.py", "tensorboardX"):
        "protobuf's import cost, paid only by runs that log to TensorBoard",
    # A cycle, to be cut in model/ (another stream of work edits it).
    ("model/base.py", "litebert.model.hub"):
        "hub reaches base through model.unroll: a cycle",
}


def imports_in_functions(source: str) -> list[tuple[int, str]]:
    """(line, imported module) of each import statement inside a function or method body,
    nested functions included; `from . import x` counts as the relative module."""
    found = set()
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Import):
                found |= {(node.lineno, alias.name) for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                found.add((node.lineno, "." * node.level + (node.module or "")))
    return sorted(found)


def deferred_imports() -> dict[tuple[str, str], list[int]]:
    """(path under src/litebert, imported module) -> lines, for every module but the
    commands'."""
    out: dict[tuple[str, str], list[int]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        if where.startswith(CLI):
            continue
        for line, module in imports_in_functions(path.read_text(encoding="utf-8")):
            out.setdefault((where, module), []).append(line)
    return out


def test_the_checker_finds_imports_inside_functions():
    source = ("import os\n"
              "from typing import TYPE_CHECKING\n"
              "if TYPE_CHECKING:\n"
              "    import numpy\n"
              "def f():\n"
              "    import json\n"
              "    def inner():\n"
              "        from collections import abc\n"
              "async def g():\n"
              "    from . import sibling\n"
              "class C:\n"
              "    import math\n"
              "    def method(self):\n"
              "        import torch.nn as nn, re\n")
    assert imports_in_functions(source) == [
        (6, "json"), (8, "collections"), (10, "."), (14, "re"), (14, "torch.nn")]


def test_imports_sit_at_the_top_of_each_module():
    found = deferred_imports()
    new = [f"{where}:{lines[0]} imports {module} inside a function"
           for (where, module), lines in found.items() if (where, module) not in DEFERRED_IMPORTS]
    assert not new, ("move each import to the top of its module, or give DEFERRED_IMPORTS "
                     "its reason:\n" + "\n".join(new))
    gone = [f"{where}: {module}" for where, module in DEFERRED_IMPORTS
            if (where, module) not in found]
    assert not gone, ("no longer inside a function; delete from DEFERRED_IMPORTS:\n"
                      + "\n".join(gone))
    assert all(reason.strip() for reason in DEFERRED_IMPORTS.values())


# ---- the tests: helpers in tests/helpers, fixtures in conftest.py -----------------------------

TESTS = Path(__file__).parent


def is_test_module(module: str) -> bool:
    """tests.X.test_Y or a conftest: a module pytest collects, never one to import."""
    last = module.rsplit(".", 1)[-1]
    return module.startswith("tests.") and (last.startswith("test_") or last == "conftest")


def imported_test_modules(source: str) -> list[tuple[int, str]]:
    """(line, module) of each import of a test module or a conftest, by any spelling:
    `import tests.a.test_b`, `from tests.a.test_b import x`, `from tests.a import test_b`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if is_test_module(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if is_test_module(node.module):
                found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names
                      if is_test_module(f"{node.module}.{a.name}")]
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            names = [node.module or ""] + [a.name for a in node.names]
            found += [(node.lineno, "." * node.level + name) for name in names
                      if name.startswith("test_") or name == "conftest"]
    return found


def test_the_checker_finds_each_spelling_of_a_test_module_import():
    source = ("import tests.train.test_pretrain\n"
              "from tests.conftest import small_config\n"
              "from tests.train import test_pretrain as mlm\n"
              "from . import conftest\n"
              "from tests.helpers.pretrain import run_config\n"
              "from tests.data.builds import write_corpus\n")
    assert imported_test_modules(source) == [
        (1, "tests.train.test_pretrain"), (2, "tests.conftest"),
        (3, "tests.train.test_pretrain"), (4, ".conftest")]


def test_no_test_module_or_conftest_imports_another():
    """A shared helper is a plain module (tests/helpers/), a shared fixture is in a
    conftest.py: a fixture imported from a test module is built again for each module that
    imports it, and a test module's helpers are tied to its tests."""
    found = [f"{path.relative_to(TESTS.parent)}:{line} imports {module}"
             for path in sorted(TESTS.rglob("*.py"))
             for line, module in imported_test_modules(path.read_text(encoding="utf-8"))]
    assert not found, ("move what is shared to tests/helpers/ (a helper) or a conftest.py "
                       "(a fixture):\n" + "\n".join(found))
