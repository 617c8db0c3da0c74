"""Prompt bundles on the settings page: listed with the one in use, two compared, a frozen
experiment promoted to baseline (after a confirmation that shows the diff), and rolled back."""

from __future__ import annotations

from pathlib import Path

import pytest
from nicegui.testing import User, UserInteraction

from engine.prompts.registry import BundleRegistry
from tests.web.conftest import service_for
from tests.web.test_ask_page import eventually, found, texts_of
from web.pages import register

pytestmark = pytest.mark.anyio


async def test_bundles_are_listed_compared_promoted_and_rolled_back(
    ui_user: User, tmp_path: Path, no_keys: None
) -> None:
    service = service_for(tmp_path / "home")
    registry = BundleRegistry.of(service.data)
    shipped = registry.shipped()
    draft = registry.new(f"{shipped.id}@{shipped.version}")
    ref = f"{draft.id}@{draft.version}"
    text = draft.templates["system"] + "\nAlways answer in one short paragraph.\n"
    registry.write_template(ref, "system", text)
    frozen = registry.freeze(ref)
    register(service)

    await ui_user.open("/settings")
    rows = texts_of(ui_user, "bundle-row")
    # The baseline shipped before this one (its parent) is still listed, first.
    assert [r.split(" · ")[0] for r in rows] == [
        "baseline@1.0.0",
        f"{shipped.id}@{shipped.version}",
        ref,
    ]
    assert len(found(ui_user, "bundle-active")) == 1 and "shipped" in rows[1]

    found(ui_user, "bundle-diff-b")[0].set_value(ref)
    ui_user.find(marker="bundle-diff").click()
    await ui_user.should_see(marker="bundle-diff-text")
    diff = texts_of(ui_user, "bundle-diff-text")[0]
    assert "+Always answer in one short paragraph." in diff

    # The experiment's row is the last; the older baseline has a promote button too.
    UserInteraction(ui_user, {found(ui_user, "bundle-promote")[-1]}, None).click()
    await ui_user.should_see(marker="bundle-confirm")
    await ui_user.should_see("+Always answer in one short paragraph.")  # what changes, first
    ui_user.find(marker="bundle-confirm-yes").click()
    await eventually(
        lambda: registry.active().hash == frozen.hash and bool(found(ui_user, "bundle-promote"))
    )
    active = [b.ref for b in service.bundles() if b.active]
    assert active == [ref]

    ui_user.find(marker="bundle-rollback").click()
    await ui_user.should_see(marker="bundle-confirm")
    ui_user.find(marker="bundle-confirm-yes").click()
    await eventually(lambda: registry.active().hash == shipped.hash)
    ui_user.find(marker="bundle-rollback").click()
    ui_user.find(marker="bundle-confirm-yes").click()
    await ui_user.should_see("nothing to roll back")  # said plainly, nothing changes
