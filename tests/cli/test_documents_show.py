"""`citewise documents show DOC --json` prints the document's import report; `status` says how
many documents were imported with warnings."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli.test_cli import notes, run

REALWORLD = Path(__file__).resolve().parents[1] / "realworld"


def test_documents_show_prints_the_import_report_and_status_counts_the_warnings(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = notes(tmp_path / "n", **{"a.md": "# A\n\nAlpha beta gamma.\n"})
    shutil.copy(REALWORLD / "epub" / "idpf-haruko-html-jpeg.epub", folder / "book.epub")
    code, out, _ = run(capsys, "import", str(folder), "--json")
    assert code == 0, out

    code, out, _ = run(capsys, "documents", "show", "book.epub", "--json")
    assert code == 0
    shown = json.loads(out)
    assert shown["source"] == "book.epub" and shown["format"] == "epub"
    report = shown["report"]
    assert report["warnings"] == [
        {
            "code": "images_not_read",
            "message": report["warnings"][0]["message"],
            "pages": [],
            "count": 12,
        }
    ]
    assert "12 images" in report["warnings"][0]["message"]
    for field in ("pages", "pages_with_text", "pages_ocr", "ocr_confidence", "chars"):
        assert field in report
    assert report["chars"] > 500 and report["lang"] in ("en", "zh")
    assert isinstance(report["parse_seconds"], float)

    code, out, _ = run(capsys, "documents", "show", shown["doc_id"])  # by doc_id, as text
    assert code == 0 and "warning images_not_read" in out and "characters" in out

    code, out, _ = run(capsys, "status", "--json")
    assert json.loads(out)["active_snapshot"]["documents_with_warnings"] == 1
    code, out, _ = run(capsys, "status")
    assert "1 document imported with warnings" in out

    code, _, err = run(capsys, "documents", "show", "nope.md")
    assert code == 2 and "neither a doc_id nor a document source" in err
