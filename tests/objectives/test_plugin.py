"""Objectives from outside the package: `--objective package.module:Class`.

The built-in objectives' modules, copied unchanged under other module names onto the path,
must train, evaluate, export and resume exactly as the built-ins do: nothing may depend on an
objective's module path or registry name. An objective that carries state across steps gets
it saved in every checkpoint and restored on resume.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import litebert.objectives.electra
import litebert.objectives.mlm
from litebert.cli import main
from litebert.objectives import OBJECTIVES, ObjectiveError, evaluate_directory, resolve
from litebert.train import checkpoint
from litebert.train.pretrain import pretrain
from litebert.train.run_config import RunConfigError, load_run_config
from litebert.train.state import load_model_state
from litebert.train.throughput import TIMING_FIELDS
from tests.helpers.electra import MICRO
from tests.helpers.pretrain import read_metrics, run_config

COPIES = {"mlm": ("copied_mlm", litebert.objectives.mlm),
          "electra": ("copied_electra", litebert.objectives.electra)}
STATEFUL = '''
import torch
from litebert.objectives.mlm import MLMObjective


class CountingMLM(MLMObjective):
    """MLM whose loss carries a running count of the steps seen: state across steps."""

    def __init__(self, run, data=None):
        super().__init__(run, data)
        self.seen = torch.zeros(())

    def begin_step(self, step):
        self.seen += 1

    def loss_sums(self, model, batch):
        return super().loss_sums(model, batch) * (1 + 0.01 * self.seen)

    def state_dict(self):
        return {"seen": self.seen.clone()}

    def load_state_dict(self, state):
        self.seen = state["seen"].clone()
'''


@pytest.fixture
def plugins(tmp_path, monkeypatch) -> Path:
    """A directory on sys.path with the built-in modules copied under other names."""
    root = tmp_path / "plugins"
    root.mkdir()
    for module_name, module in COPIES.values():
        shutil.copy(module.__file__, root / f"{module_name}.py")
    (root / "counting.py").write_text(STATEFUL)
    monkeypatch.syspath_prepend(str(root))
    return root


def spelled(name: str, copied: bool) -> str:
    """The objective's spelling: the registry name, or module:Class of its copy (the class
    name found through the registry)."""
    module_name, _ = COPIES[name]
    return f"{module_name}:{OBJECTIVES[name].__name__}" if copied else name


def objective_run(data_dir, out, name: str, copied: bool, **kw):
    extra = {"model": "electra-small", "model_overrides": MICRO, "optimizer": "adamw",
             "lr": 1e-3} if name == "electra" else {}
    fields = {"temperature": 2.0} if name == "electra" else {"eval_pair_tasks": "both"}
    return run_config(data_dir, out, **{**extra, "max_steps": 4, "save_every": 2,
                                        "eval_every": 2, "keep_last": 3, **kw},
                      objective={"name": spelled(name, copied), **fields})


def without_timing(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING_FIELDS} for r in rows]


def export_files(run_dir: Path) -> dict[str, bytes]:
    root = run_dir / "export"
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


@pytest.mark.parametrize("name", ["mlm", "electra"])
def test_a_copied_objective_trains_evaluates_exports_and_resumes_as_the_builtin(
        data_dir, tmp_path, plugins, name):
    builtin, copied = tmp_path / "builtin", tmp_path / "copied"
    pretrain(objective_run(data_dir, builtin, name, copied=False))
    pretrain(objective_run(data_dir, copied, name, copied=True))
    assert without_timing(read_metrics(copied)[0]) == without_timing(read_metrics(builtin)[0])
    assert read_metrics(copied)[1] == read_metrics(builtin)[1]  # every evaluation
    assert export_files(copied) == export_files(builtin)  # byte for byte
    # Resumed from step 2: the same run as the uninterrupted built-in one.
    resumed = tmp_path / "resumed"
    shutil.copytree(copied, resumed)
    shutil.rmtree(resumed / "export")
    shutil.rmtree(checkpoint.latest(resumed))
    pretrain(objective_run(data_dir, resumed, name, copied=True, resume="auto"))
    assert without_timing(read_metrics(resumed)[0]) == without_timing(read_metrics(builtin)[0])
    assert export_files(resumed) == export_files(builtin)
    # The exported directory is evaluated by the one dispatch, whoever trained it.
    model = "export/discriminator" if name == "electra" else "export"
    scored = [evaluate_directory(run / model, data_dir, instances=40, seed=3, batch_size=8)
              for run in (builtin, copied)]
    assert scored[0][0] is scored[1][0]
    where = {"generator"}  # the path of the generator each was scored with
    assert {k: v for k, v in scored[0][1].items() if k not in where} == {
        k: v for k, v in scored[1][1].items() if k not in where}


def test_the_command_line_names_a_class_and_keeps_the_recipes_fields(data_dir, tmp_path,
                                                                     plugins):
    recipe = tmp_path / "electra.yaml"
    recipe.write_text("model: electra-small\nobjective: {name: electra, temperature: 3.0}\n")
    cfg = load_run_config(recipe, {"objective": spelled("electra", True)})
    assert resolve(cfg.objective.name).__module__ == "copied_electra"  # the class that runs
    assert type(cfg.objective) is resolve(cfg.objective.name).Config
    assert (cfg.objective.name, cfg.objective.temperature) == ("copied_electra:"
                                                               "ElectraObjective", 3.0)
    cfg = load_run_config(recipe, {"objective.temperature": 4})  # --set objective.FIELD
    assert cfg.objective.temperature == 4.0
    # The recipe's fields are validated against the class that runs.
    with pytest.raises(RunConfigError, match="unknown field.*temperature for 'mlm'"):
        load_run_config(recipe, {"objective": "mlm"})
    run = tmp_path / "cli"
    args = ["pretrain", "--config", str(recipe), "--data", str(data_dir), "--out", str(run),
            "--objective", spelled("electra", True), "--max-steps", "2", "--batch-size", "8",
            "--micro-batch-size", "8", "--no-export", "--set", "objective.temperature=5",
            "--set", f"model_overrides={json.dumps(MICRO)}", "--eval-every", "2"]
    assert main(args) == 0
    saved = json.loads((run / "config.json").read_text())["pretrain"]["objective"]
    assert saved["name"] == "copied_electra:ElectraObjective" and saved["temperature"] == 5.0


@pytest.mark.parametrize(("value", "message"), [
    ("nowhere_module:Thing", "cannot import nowhere_module"),
    ("copied_mlm:NotAClass", "has no objective class 'NotAClass'"),
    ({"name": "mlm", "eval_pair_task": "both"}, r"unknown field\(s\) eval_pair_task"),
    ({"name": "electra", "temperature": "hot"}, r"objective.temperature='hot': not a float"),
    ({"name": "electra", "discriminator_pair_task": 1}, "task=1: not a bool"),
    ({"name": "electra", "temperature": -1.0}, "temperature=-1.0: must be positive"),
])
def test_a_bad_objective_or_field_is_an_error_naming_it(plugins, tmp_path, value, message):
    recipe = tmp_path / "bad.yaml"
    recipe.write_text(json.dumps({"objective": value}))
    with pytest.raises(RunConfigError, match=message) as err:
        load_run_config(recipe, {})
    assert str(recipe) in str(err.value)
    with pytest.raises(ObjectiveError):
        resolve("nowhere_module:Thing")


def test_an_objectives_state_is_saved_and_restored(data_dir, tmp_path, plugins):
    """CountingMLM's loss depends on its step count: a resume that lost it would differ."""
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    spec = {"name": "counting:CountingMLM"}
    pretrain(run_config(data_dir, straight, max_steps=4, save_every=2, keep_last=3,
                        objective=spec))
    saved = load_file(checkpoint.list_checkpoints(straight)[0] / "objective-rank0.safetensors")
    assert saved["seen"].item() == 2.0
    shutil.copytree(straight, resumed)
    shutil.rmtree(checkpoint.latest(resumed))
    pretrain(run_config(data_dir, resumed, max_steps=4, save_every=2, keep_last=3,
                        objective=spec, resume="auto"))
    a, b = (load_model_state(checkpoint.latest(r))[0] for r in (straight, resumed))
    assert all(torch.equal(a[k], b[k]) for k in a)
    # Without the state the resumed run differs: the test can fail.
    lost = tmp_path / "lost"
    shutil.copytree(straight, lost)
    shutil.rmtree(checkpoint.latest(lost))
    step_2 = checkpoint.latest(lost)
    (step_2 / "objective-rank0.safetensors").unlink()
    record = json.loads((step_2 / "state.json").read_text())
    record["files"].pop("objective-rank0.safetensors")
    (step_2 / "state.json").write_text(json.dumps(record))
    with pytest.raises(KeyError, match="seen"):  # CountingMLM needs its state back
        pretrain(run_config(data_dir, lost, max_steps=4, save_every=2, keep_last=3,
                            objective=spec, resume="auto"))
