"""Import semantics: add-or-update by source, removal, skips, bad input, determinism, pins."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from actors.app import App
from actors.catalog import Catalog
from actors.ingest import ImportProgress, PauseGate
from engine.paths import DataDir
from index.snapshot import verify_snapshot
from tests.corpus import DOCS, make_app

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["trio", "asyncio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def notes(folder: Path, **files: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder


async def imported(app: App, *paths: Path, **kw: object) -> object:
    try:
        return await app.import_paths(list(paths), **kw)  # type: ignore[arg-type]
    finally:
        await app.aclose()


async def test_folder_import_recurses_keeps_supported_and_lists_the_rest(tmp_path: Path) -> None:
    folder = notes(
        tmp_path / "notes",
        **{
            "a.md": "# Alpha\n\nAlpha is the first letter.\n",
            "sub/b.txt": "Beta text about the second letter.\n",
            "sub/photo.jpg": "not really a photo",
            "c.html": "<html><head><title>Gamma</title></head>"
            "<body><h1>Gamma</h1><p>Third.</p></body></html>",
        },
    )
    app = make_app(tmp_path / "home")
    result = await imported(app, folder)
    assert result.status == "ready"  # type: ignore[attr-defined]
    assert [s.source for s in result.skipped] == ["sub/photo.jpg"]  # type: ignore[attr-defined]
    m = Catalog(app.data, "default").active_manifest()
    assert m is not None
    assert [d.source for d in m.documents] == ["a.md", "c.html", "sub/b.txt"]
    assert m.stats.documents_in == 3 and m.stats.files_skipped == 1


async def test_explicit_unsupported_file_fails_alone_and_rest_lands(tmp_path: Path) -> None:
    folder = notes(tmp_path / "n", **{"good.md": "# Good\n\nFine text.\n", "bad.xyz": "?"})
    app = make_app(tmp_path / "home")
    result = await imported(app, folder / "good.md", folder / "bad.xyz")
    assert result.status == "ready_partial"  # type: ignore[attr-defined]
    (failure,) = result.failed_documents  # type: ignore[attr-defined]
    assert (failure.source, failure.reason) == ("bad.xyz", "unsupported_type")


async def test_reimporting_an_edited_file_replaces_that_document_only(tmp_path: Path) -> None:
    folder = notes(tmp_path / "n", **{"a.md": "# A\n\nOld text.\n", "b.md": "# B\n\nStays.\n"})
    root = tmp_path / "home"
    first = await imported(make_app(root), folder)
    (folder / "a.md").write_text("# A\n\nNew text about zebras.\n", encoding="utf-8")
    second = await imported(make_app(root), folder)
    assert second.status == "ready"  # type: ignore[attr-defined]
    assert second.stats.documents_reused == 1  # type: ignore[attr-defined]
    catalog = Catalog(DataDir(root), "default")
    with catalog.pin_active() as snap:
        assert snap is not None
        texts = [snap.block(i).text for i in range(snap.n_blocks)]
    assert any("zebras" in t for t in texts) and not any("Old text" in t for t in texts)
    assert any("Stays" in t for t in texts)
    # the old snapshot still has the old version
    with catalog.pinned(first.snapshot_id) as old:  # type: ignore[attr-defined]
        assert any("Old text" in old.block(i).text for i in range(old.n_blocks))
    # importing again with no change builds nothing
    third = await imported(make_app(root), folder)
    assert third.status is None and third.snapshot_id == second.snapshot_id  # type: ignore[attr-defined]


async def test_an_edited_document_embeds_only_its_changed_blocks_and_counts_the_rest_reused(
    tmp_path: Path,
) -> None:
    sections = {
        f"Topic {k}": f"Paragraph {k} tells the reader about subject number {k} at length."
        for k in range(6)
    }
    text = "\n\n".join(f"# {title}\n\n{body}" for title, body in sections.items())
    folder = notes(tmp_path / "n", **{"a.md": text})
    root = tmp_path / "home"
    first = await imported(make_app(root), folder)
    blocks = first.stats.blocks_chunked  # type: ignore[attr-defined]
    assert blocks == 6 and first.stats.blocks_embedded == 6  # type: ignore[attr-defined]
    edited = text.replace("subject number 3", "a different subject, number three")
    (folder / "a.md").write_text(edited, encoding="utf-8")
    second = await imported(make_app(root), folder)
    s = second.stats  # type: ignore[attr-defined]
    # One block's text changed: only its vectors are new, the five others come from the cache
    # (with several vectors per block, every part of a block must be a hit for it to count).
    assert (s.blocks_chunked, s.blocks_embedded, s.embedding_cache_hits) == (6, 1, 5)


async def test_remove_takes_a_document_out_by_source_or_doc_id(tmp_path: Path) -> None:
    folder = notes(tmp_path / "n", **{"a.md": "# A\n\nApples.\n", "b.md": "# B\n\nBananas.\n"})
    root = tmp_path / "home"
    await imported(make_app(root), folder)
    app = make_app(root)
    try:
        result = await app.remove(["a.md"])
    finally:
        await app.aclose()
    assert result.status == "ready"
    m = Catalog(DataDir(root), "default").active_manifest()
    assert m is not None and [d.source for d in m.documents] == ["b.md"]
    app = make_app(root)
    try:
        await app.remove([m.documents[0].doc_id])
    finally:
        await app.aclose()
    m2 = Catalog(DataDir(root), "default").active_manifest()
    assert m2 is not None and m2.documents == ()


async def test_same_inputs_and_settings_give_the_same_content_hash(tmp_path: Path) -> None:
    folder = notes(
        tmp_path / "n",
        **{
            "a.md": "# A\n\n" + "Alpha beta gamma. " * 200,
            "z.txt": "第 1 章 测试\n\n这是中文。" * 50,
        },
    )
    one = await imported(make_app(tmp_path / "h1"), folder)
    two = await imported(make_app(tmp_path / "h2"), folder)
    m1 = Catalog(DataDir(tmp_path / "h1"), "default").active_manifest()
    m2 = Catalog(DataDir(tmp_path / "h2"), "default").active_manifest()
    assert m1 is not None and m2 is not None
    assert one.snapshot_id != two.snapshot_id  # type: ignore[attr-defined]
    assert m1.content_hash == m2.content_hash and len(m1.content_hash) == 64


async def test_pause_and_resume_hold_the_pipeline_between_documents(tmp_path: Path) -> None:
    import anyio

    folder = notes(tmp_path / "n", **{f"d{i}.md": f"# D{i}\n\nText {i}.\n" for i in range(6)})
    app = make_app(tmp_path / "home")
    gate = PauseGate()
    seen: list[ImportProgress] = []
    gate.pause()

    async def release() -> None:
        await anyio.sleep(0.5)
        assert all(p.documents_done == 0 for p in seen)
        gate.resume()

    async with anyio.create_task_group() as tg:
        tg.start_soon(release)
        result = await imported(
            app,
            folder,
            gate=gate,
            on_progress=lambda p: seen.append(
                ImportProgress(**{f: getattr(p, f) for f in p.__struct_fields__})
            ),
        )
    assert result.status == "ready"  # type: ignore[attr-defined]
    assert any(p.state == "paused" for p in seen)
    assert seen[-1].documents_done == 6 and seen[-1].state == "done"


async def test_bad_files_fail_alone_with_reasons_and_the_batch_lands(tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    shutil.copy(DOCS / "nodejs-md" / "events.md", folder / "events.md")
    (folder / "empty.pdf").write_bytes(b"")
    (folder / "noise.pdf").write_bytes(bytes(range(256)) * 40)
    pdf = (DOCS / "debian-reference.en.pdf").read_bytes()
    (folder / "truncated.pdf").write_bytes(pdf[: len(pdf) // 3])
    (folder / "bad-utf8.txt").write_bytes(b"caf\xe9 \xff\xfe\x00 \x80\x81 broken")
    app = make_app(tmp_path / "home")
    result = await imported(app, folder)
    assert result.status == "ready_partial"  # type: ignore[attr-defined]
    reasons = {f.source: f.reason for f in result.failed_documents}  # type: ignore[attr-defined]
    assert set(reasons) == {"empty.pdf", "noise.pdf", "truncated.pdf", "bad-utf8.txt"}
    assert reasons["empty.pdf"] == "empty_file"
    assert reasons["bad-utf8.txt"] == "invalid_encoding"
    assert all(f.message for f in result.failed_documents)  # type: ignore[attr-defined]
    m = Catalog(app.data, "default").active_manifest()
    assert m is not None and [d.source for d in m.documents] == ["events.md"]
    assert verify_snapshot(Catalog(app.data, "default").snapshot_path(m.snapshot_id)).ok
    # nothing was written outside the data directory
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["events.md", "empty.pdf", "noise.pdf", "truncated.pdf", "bad-utf8.txt"]
    )


async def test_build_statistics_reconcile_across_carried_reused_and_new_documents(
    tmp_path: Path,
) -> None:
    folder = notes(tmp_path / "n", **{"a.md": "# A\n\nApples.\n", "b.md": "# B\n\nBananas.\n"})
    extra = notes(tmp_path / "x", **{"c.md": "# C\n\nCherries.\n"})
    root = tmp_path / "home"
    await imported(make_app(root), folder)
    (folder / "b.md").write_text("# B\n\nBlueberries instead.\n", encoding="utf-8")
    await imported(make_app(root), extra / "c.md", folder / "a.md", folder / "b.md")
    m = Catalog(DataDir(root), "default").active_manifest()
    assert m is not None
    s = m.stats
    assert s.documents_in == s.documents_succeeded + s.documents_failed == 3
    assert (s.documents_reused, s.documents_carried) == (1, 0)
    assert s.blocks_indexed == s.blocks_chunked + s.blocks_carried
    assert s.blocks_chunked == s.blocks_reused + s.blocks_embedded + s.embedding_cache_hits
    await imported(make_app(root), notes(tmp_path / "y", **{"d.md": "# D\n\nDates.\n"}))
    m = Catalog(DataDir(root), "default").active_manifest()
    assert m is not None
    s = m.stats
    assert (s.documents_in, s.documents_carried) == (1, 3)
    assert (
        s.blocks_indexed
        == s.blocks_chunked + s.blocks_carried
        == sum(d.blocks for d in m.documents)
    )


async def test_a_new_vector_layout_embeds_the_untouched_documents_again_instead_of_dropping_them(
    tmp_path: Path,
) -> None:
    """Upgrading to sentence vectors (or changing the embedding model) makes the parent's
    vectors unusable; importing one new file then must keep every other document, embedded
    again from the blocks the parent stored (their files may be gone by now)."""
    old = notes(tmp_path / "old", **{"a.md": "# A\n\nAbout otters.\n", "b.md": "# B\n\nOn owls.\n"})
    root = tmp_path / "home"
    first = await imported(make_app(root, embedding={"granularity": "block"}), old)
    shutil.rmtree(old)  # the originals moved away since: only the snapshot holds them
    new = notes(tmp_path / "new", **{"c.md": "# C\n\nCranes in winter.\n"})
    second = await imported(make_app(root, embedding={"granularity": "sentence"}), new)
    assert second.status == "ready", second  # type: ignore[attr-defined]
    assert second.library_documents == 3  # type: ignore[attr-defined]
    catalog = Catalog(DataDir(root), "default")
    with catalog.pin_active() as snap:
        assert snap is not None and snap.manifest.snapshot_id != first.snapshot_id  # type: ignore[attr-defined]
        assert sorted(d.source for d in snap.documents) == ["a.md", "b.md", "c.md"]
        assert snap.manifest.vector_layout is not None
        assert snap.manifest.vector_layout.granularity == "sentence"
        texts = " ".join(snap.block(i).text for i in range(snap.n_blocks))
        assert verify_snapshot(snap.path).ok
    assert "otters" in texts and "owls" in texts and "Cranes" in texts
