"""`citewise import --progress`: the bar counts documents, pages read and blocks embedded and
ends at 100 %, each failure is printed with its reason, and the closing line counts the whole
library (with the right plurals)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cli import main
from tests.corpus import DOCS
from tests.servers.embedding_server import Delay, EmbeddingServer
from tests.web.test_import_panel import broken_pdfs


def test_import_progress_shows_pages_blocks_failures_and_counts_the_library(
    home: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    embedding_server: EmbeddingServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    embedding_server.script(*[Delay(0.05)] * 1000)
    for key, value in {
        "PROVIDER": "openai_compatible",
        "BASE_URL": embedding_server.url,
        "MODEL": "test-embedding",
        "DIMENSIONS": str(embedding_server.dimensions),
        "BATCH_SIZE": "64",
        "API_KEY": "sk-test-embedding",
    }.items():
        monkeypatch.setenv(f"CITEWISE_EMBEDDING_{key}", value)
    monkeypatch.setenv("COLUMNS", "200")
    folder = tmp_path / "docs"
    folder.mkdir()
    shutil.copy2(DOCS / "debian-reference.en.pdf", folder)
    broken_pdfs(folder)

    code = main(["import", str(folder), "--progress"])
    captured = capsys.readouterr()
    assert code == 3  # ready_partial: what could be read is usable, the failures are listed
    err = captured.err
    assert "locked.pdf could not be imported (parse: encrypted): This PDF is password" in err
    assert "truncated.pdf could not be imported (parse: corrupt): This PDF is cut off" in err
    bar = err.strip().splitlines()[-1]
    assert bar.startswith("done") and "100%" in bar and "3/3 docs (2 failed)" in bar
    assert "261/261 pages read" in bar
    embedded = bar.split(" · ")[2]
    done, total = embedded.removesuffix(" blocks embedded").split("/")
    assert done == total and int(total.replace(",", "")) > 500
    assert "0 emb tokens" not in bar
    out = captured.out.splitlines()
    assert out[0] == "1 document in the library; 1 added; 2 could not be imported — see why below."

    # the same bytes again: nothing to do, and the library still counted
    code = main(["import", str(folder / "debian-reference.en.pdf")])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "1 document in the library; 1 unchanged."
