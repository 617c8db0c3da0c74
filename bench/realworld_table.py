"""Per-format outcomes of the regression corpus (tests/realworld/<format>/) through parse_file,
for before/after tables: files, landed, landed but garbled (judged by THIS checkout's
text-quality check), failed by reason, warnings by code, printed as one JSON line.

    PYTHONPATH=<checkout to measure> python bench/realworld_table.py tests/realworld ocr|off

The parser measured is the one on PYTHONPATH (an older checkout works too, made with
`git worktree add`); the quality check is always this file's checkout's, loaded by path, so
"garbled" means the same in every run.
"""

from __future__ import annotations

import collections
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

FORMATS = ("pdf", "epub", "docx", "html", "text")


def _quality() -> ModuleType:
    path = Path(__file__).resolve().parents[1] / "engine" / "parsing" / "quality.py"
    spec = importlib.util.spec_from_file_location("citewise_quality", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def table(corpus: Path, ocr: bool) -> dict[str, dict[str, Any]]:
    from engine.parsing import ParseError, parse_file
    from engine.parsing.limits import ParseLimits

    quality = _quality()
    try:
        limits = ParseLimits(ocr=ocr)
    except TypeError:  # a checkout from before OCR
        limits = ParseLimits()
    rows = {}
    for fmt in FORMATS:
        files = sorted(p for p in (corpus / fmt).iterdir() if p.is_file() and p.name != "README.md")
        landed = garbled = warned = 0
        failed: collections.Counter[str] = collections.Counter()
        codes: collections.Counter[str] = collections.Counter()
        for path in files:
            try:
                doc = parse_file(path, limits)
            except ParseError as exc:
                failed[exc.reason] += 1
                continue
            landed += 1
            texts = [p.text for s in doc.sections for p in s.paragraphs]
            if not quality.page_quality(texts).readable:
                garbled += 1
            found = getattr(doc, "warnings", ())
            warned += bool(found)
            codes.update(getattr(w, "code", str(w)) for w in found)
        rows[fmt] = {
            "files": len(files),
            "landed": landed,
            "garbled": garbled,
            "failed": dict(failed),
            "warned": warned,
            "warnings": dict(codes),
        }
    return rows


if __name__ == "__main__":
    print(json.dumps(table(Path(sys.argv[1]), sys.argv[2] == "ocr"), ensure_ascii=False))
