"""The prompt-bundle registry: experiments, freezing, promotion, rollback, diffs, and that the
shipped baseline in prompts/ is never written."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from engine.errors import PromptBundleError
from engine.paths import DataDir
from engine.prompts.bundle import load_baseline
from engine.prompts.registry import (
    RELEASE_DIR,
    BundleRegistry,
    active_bundle,
    next_version,
    version_key,
)

SHIPPED = "baseline@1.1.0"  # the release baseline new questions use


@pytest.fixture
def registry(tmp_path: Path) -> BundleRegistry:
    return BundleRegistry.of(DataDir(tmp_path / "data"))


def _edit(registry: BundleRegistry, ref: str, name: str, extra: str) -> Path:
    """Change a bundle's template file behind the registry's back (as an editor would)."""
    info = registry.info(ref)
    manifest = json.loads((Path(info.path) / "manifest.json").read_text(encoding="utf-8"))
    file = Path(info.path) / str(manifest["templates"][name])
    file.write_text(file.read_text(encoding="utf-8") + extra, encoding="utf-8")
    return file


def _tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_new_experiment_copies_the_templates_with_its_parent_and_is_not_frozen(
    registry: BundleRegistry,
) -> None:
    shipped = load_baseline()
    bundle = registry.new("baseline", description="shorter evidence rules")
    assert (bundle.id, bundle.version, bundle.source) == ("baseline-exp", "1", "local")
    assert bundle.parent == f"{shipped.id}@{shipped.version}"
    assert bundle.manifest.hash == ""
    assert bundle.templates == shipped.templates
    assert Path(bundle.path) == registry.root / "baseline-exp@1"
    second = registry.new("baseline")
    assert second.version == "2" and second.parent == SHIPPED
    statuses = {i.ref: i.status for i in registry.list()}
    assert statuses == {
        "baseline@1.0.0": "frozen",  # the earlier release baseline ships beside the current one
        SHIPPED: "frozen",
        "baseline-exp@1": "draft",
        "baseline-exp@2": "draft",
    }


def test_a_draft_can_be_edited_but_a_frozen_bundle_refuses_edits(registry: BundleRegistry) -> None:
    draft = registry.new("baseline")
    ref = f"{draft.id}@{draft.version}"
    edited = registry.write_template(ref, "question", "Q: {question}\n")
    assert edited.render_question("why?") == "Q: why?\n" and edited.hash != draft.hash
    frozen = registry.freeze(ref)
    assert frozen.manifest.hash == frozen.hash == edited.hash
    assert registry.freeze(ref).hash == frozen.hash  # freezing again changes nothing
    with pytest.raises(PromptBundleError, match="is frozen"):
        registry.write_template(ref, "question", "Other: {question}\n")
    assert registry.get(ref).render_question("x") == "Q: x\n"


def test_a_frozen_bundle_edited_on_disk_is_refused_and_new_makes_the_next_version(
    registry: BundleRegistry,
) -> None:
    first = registry.freeze(f"{registry.new('baseline').id}@1")
    _edit(registry, "baseline-exp@1", "system", "\nBe brief.\n")
    with pytest.raises(PromptBundleError, match=r"modified after freezing.*prompts new --from"):
        registry.get("baseline-exp@1")
    assert registry.info("baseline-exp@1").status == "modified"
    following = registry.new("baseline-exp@1")
    assert (following.version, following.parent) == ("2", "baseline-exp@1")
    assert following.templates["system"].endswith("\nBe brief.\n")
    assert following.hash != first.hash and following.manifest.hash == ""
    assert registry.get("baseline-exp").version == "2"  # a bare id means the highest version
    with pytest.raises(PromptBundleError, match="modified after freezing"):
        registry.get("baseline-exp@1")  # the old version stays refused, never re-frozen


def test_promote_needs_a_frozen_bundle_and_an_explicit_confirmation(
    registry: BundleRegistry, tmp_path: Path
) -> None:
    data = DataDir(tmp_path / "data")
    shipped = load_baseline()
    draft = registry.new("baseline")
    with pytest.raises(PromptBundleError, match="not frozen"):
        registry.promote("baseline-exp@1", confirm=True)
    registry.freeze("baseline-exp@1")
    with pytest.raises(PromptBundleError, match="add --yes"):
        registry.promote("baseline-exp@1", confirm=False)
    assert active_bundle(data).hash == shipped.hash
    assert not registry.history_file.exists()
    promoted = registry.promote("baseline-exp@1", confirm=True)
    assert active_bundle(data).hash == promoted.hash == draft.hash
    assert active_bundle(data).source == "local"
    assert [i.ref for i in registry.list() if i.active] == ["baseline-exp@1"]
    history = json.loads(registry.history_file.read_text(encoding="utf-8"))
    assert [e["ref"] for e in history["stack"]] == ["baseline-exp@1"]
    event = history["events"][-1]
    assert (event["action"], event["previous"]) == ("promote", SHIPPED)


def test_rollback_returns_to_each_previous_baseline_in_turn(registry: BundleRegistry) -> None:
    shipped = load_baseline()
    one = registry.freeze(f"{registry.new('baseline').id}@1")
    two = registry.new("baseline-exp@1")
    registry.write_template("baseline-exp@2", "question", "Q2: {question}\n")
    two = registry.freeze("baseline-exp@2")
    registry.promote("baseline-exp@1", confirm=True)
    registry.promote("baseline-exp@2", confirm=True)
    assert registry.active().hash == two.hash
    assert registry.rollback().hash == one.hash
    assert registry.active().hash == one.hash
    assert registry.rollback().hash == shipped.hash
    assert registry.active().source == "release"
    with pytest.raises(PromptBundleError, match="nothing to roll back"):
        registry.rollback()
    actions = [e.action for e in registry.history().events]
    assert actions == ["promote", "promote", "rollback", "rollback"]


def test_a_promoted_baseline_edited_afterwards_is_refused_not_silently_replaced(
    registry: BundleRegistry,
) -> None:
    registry.freeze(f"{registry.new('baseline').id}@1")
    registry.promote("baseline-exp@1", confirm=True)
    _edit(registry, "baseline-exp@1", "finalization", "\nextra\n")
    with pytest.raises(PromptBundleError, match=r"promoted baseline baseline-exp@1.*rollback"):
        registry.active()
    assert registry.rollback().source == "release"


def test_the_shipped_baseline_is_never_written(registry: BundleRegistry) -> None:
    before = _tree_digest(RELEASE_DIR)
    registry.new("baseline")
    assert registry.freeze("baseline").hash == load_baseline().hash
    with pytest.raises(PromptBundleError, match="read-only"):
        registry.write_template("baseline", "system", "{tools}{collection_status}")
    with pytest.raises(PromptBundleError, match="id of a shipped bundle"):
        registry.new("baseline-exp@1", ident="baseline")
    registry.freeze("baseline-exp@1")
    registry.promote("baseline-exp@1", confirm=True)
    registry.promote("baseline", confirm=True)
    registry.rollback()
    registry.rollback()
    assert _tree_digest(RELEASE_DIR) == before
    assert not any(p.name.startswith(".") for p in RELEASE_DIR.rglob("*"))


def test_diff_names_changed_manifest_fields_and_gives_a_unified_template_diff(
    registry: BundleRegistry,
) -> None:
    registry.new("baseline")
    registry.write_template(
        "baseline-exp@1", "question", "<question>\nQ: {question}\n</question>\n"
    )
    diff = registry.diff("baseline", "baseline-exp@1")
    fields = {c.field: (c.a, c.b) for c in diff.fields}
    assert fields["id"] == ("baseline", "baseline-exp")
    assert fields["parent"] == ("baseline@1.0.0", SHIPPED)
    assert fields["source"] == ("release", "local") and fields["frozen"] == (True, False)
    assert set(diff.templates) == {"question"}
    patch = diff.templates["question"]
    assert f"--- {SHIPPED}/question.md" in patch and "+++ baseline-exp@1/question.md" in patch
    assert "-{question}" in patch and "+Q: {question}" in patch
    assert registry.diff("baseline", "baseline").same


def test_list_reports_broken_folders_and_unknown_references_name_the_known_ones(
    registry: BundleRegistry,
) -> None:
    registry.new("baseline")
    broken = registry.root / "mine@1"
    broken.mkdir()
    (broken / "manifest.json").write_text("{not json", encoding="utf-8")
    infos = {i.ref: i for i in registry.list()}
    assert infos["mine@1"].status == "broken" and "manifest.json" in infos["mine@1"].problem
    assert infos[SHIPPED].active and not infos["baseline@1.0.0"].active
    with pytest.raises(PromptBundleError, match=r"no prompt bundle 'nope'.*baseline-exp@1"):
        registry.get("nope")
    with pytest.raises(PromptBundleError, match="not a bundle reference"):
        registry.get("../escape")


def test_versions_order_by_number_and_the_next_version_increments_the_last_number() -> None:
    assert sorted(["1.10", "1.2", "2", "1.9"], key=version_key) == ["1.2", "1.9", "1.10", "2"]
    assert [next_version(v) for v in ("1", "1.0.0", "1.9", "rc")] == ["2", "1.0.1", "1.10", "rc.1"]
