"""Importing the real shared corpus: every document lands, whole and findable."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

from actors.catalog import Catalog
from engine.parsing.model import PATH_SEPARATOR
from engine.paths import DataDir
from index.snapshot import Snapshot, verify_snapshot
from tests.corpus import CORPUS, DOCS

pytestmark = pytest.mark.slow  # tens of seconds: started first (tests/conftest.py)


def norm(text: str) -> str:
    """GOLD-FORMAT.md: NFC, casefold, all whitespace removed."""
    return "".join(unicodedata.normalize("NFC", text).casefold().split())


def corpus_files() -> list[str]:
    return sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*") if p.is_file())


def blocks_of(snap: Snapshot, source: str) -> list[tuple[str, int | None, int | None, str]]:
    """(normalised text, page_start, page_end, section path) of every block of a document."""
    doc = next(i for i, d in enumerate(snap.documents) if d.source == source)
    info = snap.documents[doc]
    out = []
    for ordinal in range(info.block_start, info.block_start + info.block_count):
        b = snap.block(ordinal)
        out.append((norm(b.text), b.page_start, b.page_end, info.sections[b.section].path))
    return out


def test_every_corpus_document_is_imported_and_verifies(corpus_home: Path) -> None:
    catalog = Catalog(DataDir(corpus_home), "default")
    manifest = catalog.active_manifest()
    assert manifest is not None and manifest.status == "ready"
    assert sorted(d.source for d in manifest.documents) == corpus_files()
    assert manifest.failed_documents == ()
    s = manifest.stats
    assert s.documents_in == s.documents_succeeded + s.documents_failed == len(corpus_files())
    assert s.blocks_chunked == s.blocks_indexed == sum(d.blocks for d in manifest.documents)
    assert verify_snapshot(catalog.snapshot_path(manifest.snapshot_id)).ok


def test_every_gold_evidence_quote_is_in_a_block_of_its_document(corpus_home: Path) -> None:
    catalog = Catalog(DataDir(corpus_home), "default")
    missing = []
    with catalog.pin_active() as snap:
        assert snap is not None
        cache: dict[str, list[tuple[str, int | None, int | None, str]]] = {}
        for line in (CORPUS / "gold.jsonl").read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            for ev in item["evidence"]:
                blocks = cache.setdefault(ev["document"], blocks_of(snap, ev["document"]))
                quote = norm(ev["quote"])
                hits = [b for b in blocks if quote in b[0]]
                if ev["page"] is not None:
                    hits = [
                        b for b in hits if b[1] is not None and b[1] <= ev["page"] <= (b[2] or b[1])
                    ]
                if not hits:
                    missing.append((item["id"], ev["document"], ev["quote"]))
    assert missing == []


def test_pdf_sections_and_pages_are_right(corpus_home: Path) -> None:
    catalog = Catalog(DataDir(corpus_home), "default")
    with catalog.pin_active() as snap:
        assert snap is not None
        blocks = blocks_of(snap, "debian-reference.en.pdf")
        quote = norm("is restricted by the umask shell builtin command")
        (hit,) = [b for b in blocks if quote in b[0]]
        assert hit[1] == 38
        assert (
            hit[3].split(PATH_SEPARATOR)[-1]
            == "Control of permissions for newly created files: umask"
        )
        info = next(d for d in snap.documents if d.source == "debian-reference.en.pdf")
        assert info.pages == 261 and info.lang == "en"
        top = [s.title for s in info.sections if s.depth == 1]
        assert "GNU/Linux tutorials" in top and "Debian package management" in top


def test_chinese_pdf_keeps_chinese_text_sections_and_pages(corpus_home: Path) -> None:
    catalog = Catalog(DataDir(corpus_home), "default")
    with catalog.pin_active() as snap:
        assert snap is not None
        info = next(d for d in snap.documents if d.source == "lshort-zh-cn.pdf")
        assert info.lang == "zh" and info.pages == 139
        overview = next(s for s in info.sections if s.title.endswith("概述") and s.page == 13)
        assert overview.path.split(PATH_SEPARATOR)[0].startswith("第一章")
        first = snap.block(
            info.block_start
            + next(
                i
                for i in range(info.block_count)
                if snap.block(info.block_start + i).section == overview.ordinal
            )
        )
        assert first.page_start == 13
        assert "概述" in first.text
        # CJK lines joined without stray spaces between two Han characters
        assert (
            not any(
                "\u4e00" <= a <= "\u9fff" and "\u4e00" <= c <= "\u9fff" and b == " "
                for a, b, c in zip(first.text, first.text[1:], first.text[2:], strict=False)
            )
            or first.text.count(" ") < len(first.text) // 20
        )


def test_chinese_text_file_gets_chapters_as_sections(corpus_home: Path) -> None:
    catalog = Catalog(DataDir(corpus_home), "default")
    with catalog.pin_active() as snap:
        assert snap is not None
        info = next(d for d in snap.documents if d.source == "debian-reference.zh-cn.txt")
        assert info.lang == "zh"
        titles = [s.title for s in info.sections]
        assert any(t.startswith("第 1 章") and "GNU/Linux 教程" in t for t in titles)
        assert any(t.startswith("1.1.") and "控制台基础" in t for t in titles)
        paths = [s.path for s in info.sections]
        assert len(paths) == len(set(paths))
