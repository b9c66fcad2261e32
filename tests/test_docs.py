"""The README is the front door and every relative link in it and under docs/ resolves.

A link is `[text](path)`, `[text](path#anchor)` or `[text](#anchor)` (images too), outside code
blocks and inline code. A path is relative to the file that holds it; an anchor into a
markdown file must be the GitHub slug of one of its headings. The shell examples are meant to
be copied: each block is valid bash, each litebert command in it one the parser takes (a
--set value one word, not globbed), and a tour builds its data at the length of the recipe
it runs. The README says how to install litebert with transformers. And the repository
stands alone: no tracked file points at the private design brief outside it
(docs/design.md holds what a reader needs of it) or keeps a placeholder marker.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import subprocess
from pathlib import Path

import yaml

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the TOML reader pytest itself depends on
    import tomli as tomllib

from litebert.cli import build_parser
from litebert.data.blend import parse_data
from litebert.train.run_config import parse_override, recipe_names, recipe_path
from tests.helpers.cli import GLOB, raw_words, unquoted

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAX_README_LINES = 260

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose_lines(text: str, keep_code: bool = False) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, with inline code spans blanked
    unless `keep_code`."""
    lines, in_fence = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence:
            lines.append((number, line if keep_code else INLINE_CODE.sub("", line)))
    return lines


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its rendered text, lower case, punctuation dropped,
    each space a hyphen (hyphens are not collapsed)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link renders as its text
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's slug in a markdown file; a repeated one numbered -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    slugs = set()
    in_fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        match = None if in_fence else HEADING.match(line)
        if match:
            slug = github_slug(match.group(2))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            slugs.add(slug if count == 0 else f"{slug}-{count}")
    return slugs


def links(path: Path) -> list[tuple[int, str]]:
    return [(number, m.group(1)) for number, line in prose_lines(path.read_text(encoding="utf-8"))
            for m in LINK.finditer(line)]


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    """One sentence per relative link in `path` that names no file, or no heading of one
    (each starting with `path` relative to `root` and the line)."""
    problems = []
    for number, target in links(path):
        if SCHEME.match(target):
            continue  # https:, mailto: ... are not ours to check offline
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        where = f"{path.relative_to(root)}:{number}"
        if not dest.exists():
            problems.append(f"{where}: {target} -> no such file {dest}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{where}: {target} -> no heading with the anchor #{anchor} "
                            f"in {dest.name}")
    return problems


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def test_every_relative_link_resolves():
    problems = [p for path in markdown_files() for p in broken_links(path)]
    assert not problems, "\n".join(problems)


def test_the_link_checker_finds_links_and_anchors():
    # The repository's own pages are checked with links of every kind in them.
    targets = [target for path in markdown_files() for _, target in links(path)]
    assert any(t.startswith("docs/") and "#" in t for t in targets)
    assert any(t.startswith("#") for t in targets)
    assert any(t.endswith(".png") for t in targets)


def test_the_link_checker_reports_broken_links(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text(
        "# A page\n\n## Figure 2: layer transitions (`layer-similarity`, 2.1M tokens)\n\n"
        "## Notes\n\n## Notes\n", encoding="utf-8")
    readme = tmp_path / "README.md"
    readme.write_text(
        "# Top\n\n"
        "[good](docs/page.md)\n"
        "[good anchor](docs/page.md#figure-2-layer-transitions-layer-similarity-21m-tokens)\n"
        "[second notes](docs/page.md#notes-1) [here](#top) [web](https://example.org/x.md#nowhere)\n"
        "[missing file](docs/gone.md) and ![missing image](docs/plot.png)\n"
        "[bad anchor](docs/page.md#figure-2) [bad local](#nowhere)\n"
        "`[in code](docs/also-gone.md)`\n\n```\n[in a block](docs/gone-too.md)\n```\n",
        encoding="utf-8")
    problems = broken_links(readme, root=tmp_path)
    assert len(problems) == 4, problems
    assert [p.split(": ")[1].split(" ->")[0] for p in problems] == [
        "docs/gone.md", "docs/plot.png", "docs/page.md#figure-2", "#nowhere"]
    assert all(p.startswith("README.md:") for p in problems)


def test_github_slugs():
    assert (github_slug("ELECTRA's Table 1: RTD (`electra-vs-mlm`)")
            == "electras-table-1-rtd-electra-vs-mlm")
    assert github_slug("MLM + SOP, 2.0-2.2M") == "mlm--sop-20-22m"
    assert github_slug("[The demo](x.md) and `bench_data.py`") == "the-demo-and-bench_datapy"


def test_readme_is_short_and_starts_with_the_two_commands():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < MAX_README_LINES
    before_first_section = text.split("\n## ", 1)[0]
    block = re.search(r"```(?:bash|sh)?\n(.*?)```", before_first_section, re.S)
    assert block, "README.md must open with a code block of the commands"
    commands = [line.split("#", 1)[0].strip() for line in block.group(1).splitlines()]
    commands = [c for c in commands if c]
    assert commands[:2] == ["make demo", "make test"], commands


def test_every_docs_page_is_linked_from_the_readme():
    linked = {(README.parent / target.partition("#")[0]).resolve()
              for _, target in links(README) if not SCHEME.match(target)}
    pages = sorted(DOCS.glob("*.md"))
    assert pages, "docs/ holds no pages"
    missing = [p.name for p in pages if p.resolve() not in linked]
    assert not missing, f"docs pages the README does not link: {missing}"


def test_the_slurm_script_and_the_cluster_commands_are_valid_bash(tmp_path):
    """docs/distributed.md's blocks are meant to be copied: each must at least parse, and
    the Slurm script must ask for what its text promises."""
    text = (DOCS / "distributed.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    (script,) = [b for b in blocks if b.startswith("#!/bin/bash\n#SBATCH")]
    for name in ("--signal=B:USR1@300", "--requeue", "--open-mode=append"):
        assert f"#SBATCH {name}" in script
    assert "trap save_and_requeue USR1" in script and "scontrol requeue" in script
    for number, block in enumerate(blocks):
        path = tmp_path / f"block{number}.sh"
        path.write_text(block, encoding="utf-8")
        checked = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert checked.returncode == 0, (block[:200], checked.stderr)


# ---- installing it elsewhere ------------------------------------------------------------------

PYPROJECT = ROOT / "pyproject.toml"


def requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~;\s]", r, maxsplit=1)[0] for r in requirements}


def test_the_interop_extra_holds_transformers_and_the_readme_says_to_install_it():
    """transformers is no dependency of litebert: the README's snippet that imports it names
    the extra that brings it, and `make test`'s set-up (.[dev]) includes that extra."""
    extras = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"][
        "optional-dependencies"]
    assert "transformers" in requirement_names(extras["interop"])
    assert "litebert[interop]" in extras["dev"]
    assert "transformers" not in requirement_names(extras["dev"])  # one pin: the extra's
    text = README.read_text(encoding="utf-8")
    snippets = [b for b in re.findall(r"```python\n(.*?)```", text, re.S)
                if re.search(r"^\s*(import|from) .*\btransformers\b", b, re.M)]
    assert snippets and all('pip install ".[interop]"' in b for b in snippets)
    install = text.split("\n## Install\n", 1)[1].split("\n## ", 1)[0]
    assert 'pip install ".[interop]"' in install and "pip install .  " in install
    assert "download.pytorch.org" in install  # where a CUDA build of torch comes from


# ---- the repository stands alone ---------------------------------------------------------------

# Spelled in pieces so that this file does not match itself.
OUTSIDE = ("../" + "shared", "DESIGN" + ".md")  # the private brief no clone has
MARKER = "<!-- " + "components:"  # a placeholder left for someone to fill in


def tracked_text_files(root: Path = ROOT) -> list[Path]:
    """Every file git tracks under `root` that reads as UTF-8 text."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True,
                            check=True).stdout.decode().split("\0")
    files = []
    for name in filter(None, listed):
        path = root / name
        try:
            path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue  # binary (a plot), or deleted in the work tree
        files.append(path)
    return files


def outside_references(root: Path = ROOT) -> list[str]:
    """'path:line: text' for each line that points outside the repository or keeps a marker."""
    problems = []
    for path in tracked_text_files(root):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if any(word in line for word in (*OUTSIDE, MARKER)):
                problems.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    return problems


def test_the_repository_stands_alone():
    """Docs and tests cite docs/design.md, never the private brief; no placeholder is left."""
    assert len(tracked_text_files()) > 100  # git answered: the check below read the tree
    problems = outside_references()
    assert not problems, "\n".join(problems)


def test_the_stand_alone_check_finds_each_kind(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text(f"see [it]({OUTSIDE[0]}/{OUTSIDE[1]})\nfine\n")
    (tmp_path / "b.py").write_text(f"# as {OUTSIDE[1]} says\n")
    (tmp_path / "c.md").write_text(f"{MARKER} updated by the lead -->\n")
    (tmp_path / "untracked.md").write_text(f"{MARKER} not tracked, not checked\n")
    (tmp_path / "plot.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe" + OUTSIDE[1].encode())
    subprocess.run(["git", "add", "docs/a.md", "b.py", "c.md", "plot.png"], cwd=tmp_path,
                   check=True)
    assert [p.split(":")[0:2] for p in outside_references(tmp_path)] == [
        ["b.py", "1"], ["c.md", "1"], ["docs/a.md", "1"]]


# ---- the shell examples run as written ---------------------------------------------------------

# The fences whose blocks are shell commands; other blocks (output, YAML, Python) are not.
SHELL_FENCES = ("bash", "sh", "shell", "console")
SHELL_BLOCK = re.compile(rf"^```({'|'.join(SHELL_FENCES)})\n(.*?)^```", re.S | re.M)
# A shell expansion stands for a value the parser takes: every one in the docs is a count, an
# index or a path.
EXPANSION = re.compile(r"\$\{?\w+\}?|\$\([^)]*\)")
ELIDED = "..."  # "the rest of the command as above": required options may be left out


def shell_blocks(path: Path) -> list[tuple[int, str]]:
    """(line of its first command, text) of each shell code block in a markdown file."""
    text = path.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start(2)) + 1, m.group(2)) for m in SHELL_BLOCK.finditer(text)]


def command_lines(block: str) -> list[list[str]]:
    """The words of each simple command in a block as the shell splits them (continued
    lines joined, comments dropped, split at ; & | && ||)."""
    commands = []
    for line in block.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        words: list[str] = []
        try:
            for word in lexer:
                if set(word) <= set(";&|"):
                    commands.append(words)
                    words = []
                else:
                    words.append(word)
        except ValueError:  # a quote closed on a later line: bash -n judges the block
            words = []
        commands.append(words)
    return [c for c in commands if c]


def litebert_arguments(words: list[str]) -> list[str] | None:
    """The arguments after `litebert`, `python -m litebert[.cli]` or `torchrun ... -m
    litebert.cli` (srun in front included); None for any other command."""
    if words[0] == "litebert":
        return words[1:]
    for i, word in enumerate(words[:-1]):
        if word == "-m" and words[i + 1] in ("litebert", "litebert.cli"):
            return words[i + 2:]
    return None


def parse_problem(arguments: list[str]) -> str | None:
    """What the real parser says against `litebert ARGUMENTS` (None: it takes them); each
    --set value must also read as `FIELD=VALUE` in YAML."""
    elided = ELIDED in arguments
    arguments = [EXPANSION.sub("1", a) for a in arguments if a != ELIDED]
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
            build_parser(arguments[0] if arguments else None).parse_args(arguments)
    except SystemExit as exit_:
        said = errors.getvalue().strip().splitlines()[-1:] or [""]
        if exit_.code != 0 and not (elided and "arguments are required" in said[0]):
            return said[0]
    for flag, value in zip(arguments, arguments[1:], strict=False):
        if flag == "--set":
            try:
                parse_override(value)
            except (ValueError, yaml.YAMLError) as err:
                return f"--set {value}: {err}"
    return None


def shell_problems(path: Path) -> list[str]:
    """'file:line: what' for each block that bash cannot parse and each litebert command
    that the parser refuses or whose --set value the shell would split or glob."""
    problems = []
    name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    for number, block in shell_blocks(path):
        where = f"{name}:{number}"
        checked = subprocess.run(["bash", "-n"], input=block, capture_output=True, text=True)
        if checked.returncode != 0:
            problems.append(f"{where}: bash -n: {' / '.join(checked.stderr.split(chr(10)))}")
        for words in command_lines(block):
            arguments = litebert_arguments(words)
            said = None if arguments is None else parse_problem(arguments)
            if said:
                problems.append(f"{where}: litebert {' '.join(arguments or [])}: {said}")
        problems += [f"{where}: {p}" for p in set_problems(block)]
    for number, span in inline_code(path):
        problems += [f"{name}:{number}: {p}" for p in set_problems(span)]
    return problems


def set_problems(text: str) -> list[str]:
    """Each --set in `text` whose value the shell would split into several words or glob."""
    problems = []
    for line in text.replace("\\\n", " ").splitlines():
        words = raw_words(line)
        for i, word in enumerate(words[:-1]):
            value, after = words[i + 1], words[i + 2:i + 3]
            if word != "--set":
                continue
            if after and not after[0].startswith("-") and after[0] not in (ELIDED, "&", "|"):
                problems.append(f"--set {value} {after[0]}: quote it, or the shell splits it")
            elif GLOB & set(unquoted(value)):
                problems.append(f"--set {value}: quote it, or the shell globs it")
    return problems


def inline_code(path: Path) -> list[tuple[int, str]]:
    """(line, text) of each inline code span outside code blocks, a span that runs on over a
    line break included (its lines joined by a space)."""
    lines = dict(prose_lines(path.read_text(encoding="utf-8"), keep_code=True))
    text = "\n".join(lines.get(n, "") for n in range(1, max(lines, default=0) + 1))
    return [(text.count("\n", 0, m.start()) + 1, " ".join(m.group(2).split()))
            for m in re.finditer(r"(`+)((?:(?!\1).)+?)\1", text, re.S)]


def test_every_shell_example_is_valid_bash_and_every_litebert_command_parses():
    """README.md's and docs/*.md's shell blocks, as a reader copies them."""
    pages = [README, *sorted(DOCS.glob("*.md"))]
    assert sum(len(shell_blocks(p)) for p in pages) > 20
    problems = [p for path in pages for p in shell_problems(path)]
    assert not problems, "\n".join(problems)


def test_the_shell_checker_finds_each_kind_of_fault(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("Any field: `--set\nmodel_overrides={sharing: attention}`, `--set\n"
                    "phases=[...]` or `--set 'phases=[...]'`.\n\n"
                    "```bash\n"
                    "litebert pretrain --set model_overrides={sharing: attention}\n"
                    "litebert pretrain --set 'model_overrides={sharing: attention}'\n"
                    "litebert pretrain --set phases=[{steps: 5}]\n"
                    "litebert pretrain --config tiny-cpu --no-such-flag\n"
                    "litebert finetune --task nope ...\n"
                    "litebert finetune --task rte ...   # elided: required options may go\n"
                    "torchrun --nproc-per-node 2 -m litebert.cli data build x \\\n"
                    "    --tokenizer t --out o --shard ${I}/4\n"
                    "if then\n"
                    "```\n")
    found = "\n".join(p.split(": ", 1)[1] for p in shell_problems(page))
    assert "bash -n" in found
    assert "unrecognized arguments: attention}" in found
    assert "--set phases=[{steps: 5}]: quote it" in found
    assert "unrecognized arguments: --no-such-flag" in found
    assert "invalid choice: 'nope'" in found
    assert "--set phases=[...]: quote it" in found
    assert len(found.splitlines()) == 9, found


# ---- a tour's data fits the recipe it runs -----------------------------------------------------

def recipe_lengths(name: str) -> set[int]:
    """The sequence lengths a built-in recipe's leading comment builds its data at
    (`--max-seq-length N`); none for a recipe that takes any length (continue-tiny-cpu)."""
    text = recipe_path(name).read_text(encoding="utf-8")
    comment = "\n".join(line for line in text.splitlines() if line.startswith("#"))
    return {int(n) for n in re.findall(r"--max-seq-length (\d+)", comment)}


def option_values(arguments: list[str], flag: str) -> list[str]:
    return [value for option, value in zip(arguments, arguments[1:], strict=False)
            if option == flag]


def length_problems(path: Path) -> list[str]:
    """Each `litebert pretrain --config RECIPE` that reads a directory which the same page
    built (`data build --out DIR --max-seq-length N`) at a length the recipe is not for."""
    built: dict[Path, int] = {}
    problems = []
    for number, block in shell_blocks(path):
        for arguments in filter(None, map(litebert_arguments, command_lines(block))):
            lengths = option_values(arguments, "--max-seq-length")
            if arguments[:2] == ["data", "build"] and lengths:
                for out in option_values(arguments, "--out"):
                    built[Path(out)] = int(lengths[0])
            if arguments[:1] != ["pretrain"]:
                continue
            phases = [v.split("=", 1)[1] for v in option_values(arguments, "--set")
                      if re.match(r"phases\.\d+\.data=", v)]
            for recipe in option_values(arguments, "--config"):
                wanted = recipe_lengths(recipe) if recipe in recipe_names() else set()
                for data in (*option_values(arguments, "--data"), *phases):
                    for directory in parse_data(data).directories:
                        if wanted and built.get(directory, min(wanted)) not in wanted:
                            problems.append(f"{path.name}:{number}: {recipe} runs on "
                                            f"{directory}, built at {built[directory]} tokens "
                                            f"here; the recipe is for {sorted(wanted)}")
    return problems


def test_each_tour_builds_its_data_at_the_length_of_the_recipe_it_runs():
    """`make demo`'s "~9 minutes" of tiny-cpu are at 128 tokens: the README once built the
    tour's data at 512 and then ran tiny-cpu on it, four times slower."""
    assert recipe_lengths("tiny-cpu") == {128} and recipe_lengths("bert-base") == {128, 512}
    problems = [p for path in (README, *sorted(DOCS.glob("*.md"))) for p in length_problems(path)]
    assert not problems, "\n".join(problems)


def test_the_length_checker_finds_a_mismatch(tmp_path):
    page = tmp_path / "tour.md"
    page.write_text("```bash\n"
                    "litebert data build c.txt --tokenizer t --out data/a --max-seq-length 512\n"
                    "litebert data build c.txt --tokenizer t --out data/b --max-seq-length 128\n"
                    "litebert pretrain --config tiny-cpu --data data/a --out r\n"
                    "litebert pretrain --config tiny-cpu --data data/b/ --out r\n"
                    "litebert pretrain --config bert-base --data data/b \\\n"
                    "    --set phases.2.data=data/a --out r\n"
                    "litebert pretrain --config electra-small --data data/a:1,data/b:1 ...\n"
                    "```\n")
    assert [p.split(": ", 1)[1] for p in length_problems(page)] == [
        "tiny-cpu runs on data/a, built at 512 tokens here; the recipe is for [128]",
        "electra-small runs on data/a, built at 512 tokens here; the recipe is for [128]"]
