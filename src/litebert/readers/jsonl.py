"""JSON lines: one JSON object per line; `text_field` holds the document, split into
paragraphs on blank lines and then into sentences; `label_field`, if given, is kept as
`Document.label` (as its text: 3 -> "3"). A bad line is skipped and counted, never fatal.
With a `span` (litebert.readers.lines) only the lines that start in it are read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from litebert.readers.base import CorpusError, CorpusStats, Document, Format
from litebert.readers.lines import Span, lines
from litebert.readers.sentences import record_documents

MAX_JSON_LINE_CHARS = 1 << 24  # a JSON line is parsed whole; longer ones are skipped


def _read_jsonl(path: Path, stats: CorpusStats, max_chars: int, text_field: str,
                label_field: str | None, span: Span | None = None) -> Iterator[Document]:
    last_cut = 0
    for lineno, line, cut in lines(path, stats, MAX_JSON_LINE_CHARS, span):
        where = f"{path}:{lineno}"
        if cut:
            if lineno != last_cut:
                last_cut = lineno
                stats.note("bad_json_lines", where, f"over {MAX_JSON_LINE_CHARS:,} characters")
            continue
        if not line.strip():
            continue
        if lineno == 1 and (span is None or span[0] == 0) and line.lstrip().startswith("["):
            raise CorpusError(f"{where}: a JSON array; litebert reads JSON lines (one object "
                              "per line): convert it, e.g. with `jq -c '.[]'`")
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            stats.note("bad_json_lines", where, f"{err.msg} (column {err.colno})")
            continue
        text = record.get(text_field) if isinstance(record, dict) else None
        if not isinstance(text, str):
            stats.note("missing_text", where, f"no string field {text_field!r}")
            continue
        label = None if label_field is None else record.get(label_field)
        yield from record_documents(text, label, where, stats, max_chars, text_field,
                                    label_field)


JSONL = Format("jsonl", _read_jsonl, "JSON lines (.jsonl, .json, .ndjson)",
               suffixes=(".jsonl", ".json", ".ndjson"))
