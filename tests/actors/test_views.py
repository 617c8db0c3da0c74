"""What the library page shows of the snapshot history: each snapshot's changes, and what a
rollback to it would leave out, from comparing manifests."""

from __future__ import annotations

from actors.views import SnapshotChanges, snapshot_changes, snapshot_views
from index.records import FailedDocument, ManifestDocument, SnapshotManifest


def _manifest(
    sid: str,
    parent: str | None,
    docs: dict[str, str],
    failed: tuple[str, ...] = (),
) -> SnapshotManifest:
    return SnapshotManifest(
        snapshot_id=sid,
        parent_id=parent,
        collection="default",
        status="ready_partial" if failed else "ready",
        created_at="2026-12-02T10:14:00Z",
        documents=tuple(
            ManifestDocument(doc_id=f"d{source}", source=source, content_hash=h, blocks=3)
            for source, h in docs.items()
        ),
        failed_documents=tuple(
            FailedDocument(source=s, stage="parse", reason="corrupt") for s in failed
        ),
    )


def test_the_first_snapshot_adds_every_document() -> None:
    first = _manifest("s1", None, {"a.md": "h1", "b.md": "h2"}, failed=("bad.pdf",))
    assert snapshot_changes(None, first) == SnapshotChanges(
        added=("a.md", "b.md"), failed=("bad.pdf",)
    )


def test_changes_count_added_removed_edited_and_new_failures() -> None:
    old = _manifest("s1", None, {"a.md": "h1", "b.md": "h2", "c.md": "h3"}, failed=("x.pdf",))
    new = _manifest(
        "s2", "s1", {"a.md": "h1", "b.md": "h2-edited", "d.md": "h4"}, failed=("x.pdf", "y.pdf")
    )
    changes = snapshot_changes(old, new)
    assert changes == SnapshotChanges(
        added=("d.md",), removed=("c.md",), edited=("b.md",), failed=("y.pdf",)
    )
    assert not changes.empty
    assert snapshot_changes(new, new).empty


def test_history_compares_each_snapshot_with_its_parent_and_with_the_active_one() -> None:
    s1 = _manifest("s1", None, {"a.md": "h1", "b.md": "h2"})
    s2 = _manifest("s2", "s1", {"a.md": "h1", "b.md": "h2", "c.md": "h3", "d.md": "h4"})
    s3 = _manifest("s3", "s2", {"a.md": "h1-new", "b.md": "h2", "c.md": "h3", "d.md": "h4"})
    views = snapshot_views("s3", [s1, s2, s3])
    assert [v.changes.added for v in views] == [("a.md", "b.md"), ("c.md", "d.md"), ()]
    assert views[2].changes.edited == ("a.md",)
    # Rolling back to s1: the two documents added since would not be searched any more.
    assert views[0].since.added == ("c.md", "d.md") and views[0].since.edited == ("a.md",)
    assert views[2].active and views[2].since.empty


def test_a_cleaned_up_parent_means_the_changes_are_not_known() -> None:
    s2 = _manifest("s2", "s1-collected", {"a.md": "h1"})
    (view,) = snapshot_views(None, [s2])
    assert not view.changes.known and not view.changes.empty
    assert not view.since.known  # no active snapshot to compare with
