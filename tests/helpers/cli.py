"""Command lines in tests: config fields as options, the entries of a command's --help,
and the shell words of a documented line."""

from __future__ import annotations

import re

import pytest

from litebert.cli import main


def cli_options(fields: dict) -> list[str]:
    """Config fields as the options of a command line (`max_steps=6` -> `--max-steps 6`);
    a None value is left out, as not given."""
    return [arg for key, value in fields.items() if value is not None
            for arg in (f"--{key.replace('_', '-')}", str(value))]


def help_entries(argv: list[str], capsys) -> dict[str, str]:
    """`litebert ARGV --help` -> {option: description} of its "options:" section."""
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--help"])
    assert exit_.value.code == 0
    section = capsys.readouterr().out.split("\noptions:\n", 1)[1]
    entries: dict[str, str] = {}
    for line in section.splitlines():
        if re.match(r"  -", line):  # "  --flag METAVAR   description", or the flag alone
            option, _, description = line.strip().partition("  ")
            last = option.split(",")[0].split()[0]
            entries[last] = description.strip()
        elif line.startswith("    "):  # a wrapped description
            entries[last] = (entries[last] + " " + line.strip()).strip()
    entries.pop("-h")
    return entries


GLOB = set("*?[{")


def unquoted(text: str) -> str:
    """`text` with what single or double quotes protect (and the quotes) left out."""
    return re.sub(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"", "", text)


def raw_words(line: str) -> list[str]:
    """The shell's words of one line as written, quotes kept, up to a comment."""
    words = re.findall(r"(?:'[^']*'?|\"(?:[^\"\\]|\\.)*\"?|[^\s'\"])+", line)
    comment = next((i for i, w in enumerate(words) if w.startswith("#")), len(words))
    return words[:comment]
