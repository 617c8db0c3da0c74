"""The snapshot plan: what carries over, what is new work, what drops out, what is built."""

from __future__ import annotations

from actors.snapshot_plan import ParentDocuments, parent_documents, plan_snapshot
from index.blockstore import DocumentInfo
from index.records import EmbeddingSpec, FailedDocument, SnapshotManifest

MODEL = EmbeddingSpec(provider="local", model="m1", dimensions=4)
OTHER_MODEL = EmbeddingSpec(provider="local", model="m2", dimensions=4)


def failure(source: str, reason: str = "corrupt") -> FailedDocument:
    return FailedDocument(source=source, stage="parse", reason=reason, message="damaged")


def parent(*failed: FailedDocument, reusable: bool = True) -> ParentDocuments:
    """An active snapshot holding a.md, b.md and c.md (numbers 0-2, hashes ha, hb, hc)."""
    return ParentDocuments(
        by_source={"a.md": (0, "ha"), "b.md": (1, "hb"), "c.md": (2, "hc")},
        failed=failed,
        reusable=reusable,
    )


def test_a_document_with_the_same_bytes_and_model_is_carried_from_its_parent_number() -> None:
    p = parent()
    assert p.carried("b.md", "hb") == 1
    assert p.carried("b.md", "edited") is None
    assert p.carried("new.md", "hb") is None
    assert parent(reusable=False).carried("b.md", "hb") is None


def test_the_parent_view_is_reusable_only_for_the_embedding_model_in_use() -> None:
    docs = [
        DocumentInfo(doc_id=f"d{i}", content_hash=h, source=s, source_label=s, title=s)
        for i, (s, h) in enumerate([("a.md", "ha"), ("b.md", "hb")])
    ]
    manifest = SnapshotManifest(
        snapshot_id="s1",
        parent_id=None,
        collection="default",
        status="ready_partial",
        created_at="2026-01-01T00:00:00Z",
        failed_documents=(failure("x.pdf"),),
        embedding=MODEL,
    )
    same = parent_documents(docs, manifest, MODEL)
    assert same.by_source == {"a.md": (0, "ha"), "b.md": (1, "hb")}
    assert same.failed == (failure("x.pdf"),) and same.reusable
    assert not parent_documents(docs, manifest, OTHER_MODEL).reusable


def test_a_first_import_embeds_everything_and_is_ready() -> None:
    plan = plan_snapshot(None, {"a.md": "ha", "b.md": "hb"}, {}, ())
    assert plan.build and plan.status == "ready"
    assert plan.embedded == ("a.md", "b.md")
    assert plan.carried == () and plan.reused == () and plan.dropped == ()
    assert not plan.parent_files_reusable


def test_a_first_import_where_everything_failed_builds_a_failed_snapshot() -> None:
    plan = plan_snapshot(None, {}, {"x.pdf": failure("x.pdf")}, ())
    assert plan.build and plan.status == "failed"
    assert plan.failures == (failure("x.pdf"),)


def test_reimporting_unchanged_files_builds_nothing_and_keeps_earlier_failures() -> None:
    plan = plan_snapshot(parent(failure("x.pdf")), {"a.md": "ha", "b.md": "hb"}, {}, ())
    assert not plan.build and plan.status is None
    assert plan.reused == ("a.md", "b.md")
    assert plan.failures == (failure("x.pdf"),)


def test_an_edited_document_is_new_work_and_the_others_carry_over() -> None:
    plan = plan_snapshot(parent(), {"a.md": "ha", "b.md": "edited"}, {}, ())
    assert plan.build and plan.status == "ready"
    assert plan.reused == ("a.md",)
    assert plan.embedded == ("b.md",)
    assert plan.carried == (("c.md", 2),)
    assert plan.dropped == ()
    assert plan.parent_files_reusable


def test_a_new_document_is_embedded_and_every_parent_document_carries_over() -> None:
    plan = plan_snapshot(parent(), {"new.md": "hn"}, {}, ())
    assert plan.embedded == ("new.md",)
    assert plan.carried == (("a.md", 0), ("b.md", 1), ("c.md", 2))


def test_a_changed_embedding_model_re_embeds_same_bytes_and_drops_the_rest() -> None:
    plan = plan_snapshot(parent(reusable=False), {"a.md": "ha"}, {}, ())
    assert plan.build and plan.status == "ready"
    assert plan.reused == () and plan.embedded == ("a.md",)
    # Vectors of another model cannot enter: the plan drops documents this run does not
    # hold, so the ingest embeds every untouched parent document again and hands it in
    # (tests/actors/test_ingest.py, a new vector layout).
    assert plan.carried == () and plan.dropped == ("b.md", "c.md")
    assert not plan.parent_files_reusable


def test_removing_a_document_drops_it_and_builds() -> None:
    plan = plan_snapshot(parent(), {}, {}, ["b.md"])
    assert plan.build and plan.status == "ready"
    assert plan.carried == (("a.md", 0), ("c.md", 2))
    assert plan.dropped == ("b.md",)


def test_removing_every_document_builds_an_empty_ready_snapshot() -> None:
    plan = plan_snapshot(parent(), {}, {}, ["a.md", "b.md", "c.md"])
    assert plan.build and plan.status == "ready"
    assert plan.carried == () and plan.dropped == ("a.md", "b.md", "c.md")


def test_a_document_imported_and_removed_in_one_run_stays() -> None:
    plan = plan_snapshot(parent(), {"b.md": "edited"}, {}, ["b.md"])
    assert plan.embedded == ("b.md",)
    assert plan.dropped == ()


def test_a_parent_document_that_fails_now_drops_out_and_is_disclosed() -> None:
    plan = plan_snapshot(parent(), {}, {"b.md": failure("b.md")}, ())
    assert plan.build and plan.status == "ready_partial"
    assert plan.carried == (("a.md", 0), ("c.md", 2))
    assert plan.dropped == ("b.md",)
    assert plan.failures == (failure("b.md"),)


def test_an_earlier_failure_imported_successfully_is_no_longer_disclosed() -> None:
    plan = plan_snapshot(parent(failure("x.pdf")), {"x.pdf": "hx"}, {}, ())
    assert plan.build and plan.status == "ready"
    assert plan.embedded == ("x.pdf",)
    assert plan.failures == ()


def test_the_same_failure_again_builds_nothing() -> None:
    plan = plan_snapshot(parent(failure("x.pdf")), {}, {"x.pdf": failure("x.pdf")}, ())
    assert not plan.build
    assert plan.failures == (failure("x.pdf"),)


def test_a_failure_with_a_new_reason_builds_and_replaces_the_old_one_in_place() -> None:
    old = (failure("w.pdf"), failure("x.pdf"), failure("y.pdf"))
    plan = plan_snapshot(parent(*old), {}, {"x.pdf": failure("x.pdf", "timeout")}, ())
    assert plan.build and plan.status == "ready_partial"
    assert plan.failures == (failure("w.pdf"), failure("x.pdf", "timeout"), failure("y.pdf"))


def test_removing_a_failed_document_stops_disclosing_it() -> None:
    plan = plan_snapshot(parent(failure("x.pdf"), failure("y.pdf")), {}, {}, ["x.pdf"])
    assert plan.failures == (failure("y.pdf"),)


def test_removing_a_failed_document_builds_a_snapshot_without_it() -> None:
    plan = plan_snapshot(parent(failure("x.pdf")), {}, {}, ["x.pdf"])
    assert plan.build
