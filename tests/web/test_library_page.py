"""The library page with NiceGUI's simulated user: importing with live progress, pause, resume,
cancel, failures and retry, uploads, removal, rollback, collections, outlines and tools."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from nicegui import ui
from nicegui.elements.upload_files import SmallFileUpload
from nicegui.testing import User, UserInteraction

from tests.web.conftest import service_for, tool_result
from tests.web.test_ask_page import eventually, found, texts_of
from web.pages import register

pytestmark = pytest.mark.anyio


def import_state(user: User) -> str:
    states = texts_of(user, "import-state")
    return states[0] if states else ""


async def import_path(user: User, path: Path) -> None:
    user.find(marker="import-path").type(str(path))
    user.find(marker="import-button").click()


async def test_folder_import_shows_progress_then_documents_and_snapshot(
    ui_user: User, tmp_path: Path, docs: Path, no_keys: None
) -> None:
    service = service_for(tmp_path / "home")
    register(service)
    await ui_user.open("/library")
    await ui_user.should_see(marker="no-documents")
    await import_path(ui_user, docs)
    # Paused at once (before the first document), so the running state can be seen.
    ui_user.find(marker="pause-button").click()
    paused = ["Documents 0 / 2 (0 failed)"]
    await eventually(lambda: texts_of(ui_user, "import-documents") == paused)
    assert import_state(ui_user) == "Paused"
    await anyio.sleep(0.8)  # two polls: nothing moves while paused
    assert texts_of(ui_user, "import-documents") == paused
    assert texts_of(ui_user, "import-eta") == [""]  # no time left is worked out while paused
    assert texts_of(ui_user, "import-document") == ["events.md — waiting", "streams.md — waiting"]
    ui_user.find(marker="resume-button").click()
    await eventually(lambda: import_state(ui_user) == "Import finished", timeout_s=60)
    assert texts_of(ui_user, "import-documents") == ["Documents 2 / 2 (0 failed)"]
    stats = texts_of(ui_user, "import-stats")[0]
    assert "blocks" in stats and not stats.startswith("0 pages · 0 blocks")
    assert set(texts_of(ui_user, "import-document")) == {"events.md — done", "streams.md — done"}
    result = texts_of(ui_user, "import-result")[0]
    assert result == "2 documents in the library; 2 added."
    await ui_user.should_see("Node events")
    await ui_user.should_see("Streams")
    assert len(found(ui_user, "snapshot-row")) == 1
    assert len(found(ui_user, "active-snapshot")) == 1


async def test_cancel_stops_the_import_and_leaves_the_knowledge_base_unchanged(
    ui_user: User, tmp_path: Path, docs: Path, no_keys: None
) -> None:
    service = service_for(tmp_path / "home")
    register(service)
    await ui_user.open("/library")
    await import_path(ui_user, docs)
    ui_user.find(marker="pause-button").click()
    await eventually(lambda: import_state(ui_user) == "Paused")
    ui_user.find(marker="cancel-button").click()
    await eventually(lambda: "cancelled" in import_state(ui_user))
    assert service.snapshots() == []
    assert not service.pending_import()  # cancelled means forgotten, not resumable
    assert service.documents() == []


async def test_failed_document_shows_its_reason_and_retry_imports_the_fixed_file(
    ui_user: User, tmp_path: Path, docs: Path, no_keys: None
) -> None:
    bad = docs / "notes.md"
    bad.write_bytes(b"\xff\xfe\x00\x00" + bytes(range(256)) * 40)
    service = service_for(tmp_path / "home")
    register(service)
    await ui_user.open("/library")
    await import_path(ui_user, docs)
    await eventually(lambda: bool(found(ui_user, "failed-document")), timeout_s=60)
    await ui_user.should_see("notes.md — The file's characters are in an encoding")
    await ui_user.should_see("parse: invalid_encoding")  # the code only under details
    bad.write_text("# Notes\n\nThe drain event resumes writing.\n", encoding="utf-8")
    ui_user.find(marker="retry-button").click()
    await eventually(lambda: ui_user.notify.contains("Importing notes.md again"))
    await eventually(lambda: not found(ui_user, "failed-document"), timeout_s=60)
    titles = [d.title for d in service.documents()]
    assert "Notes" in titles and len(titles) == 3
    await eventually(lambda: ui_user.notify.contains("notes.md is imported now."))


async def test_retry_that_fails_again_says_why(
    ui_user: User, tmp_path: Path, docs: Path, no_keys: None
) -> None:
    bad = docs / "notes.md"
    bad.write_bytes(b"\xff\xfe\x00\x00" + bytes(range(256)) * 40)
    service = service_for(tmp_path / "home")
    register(service)
    await ui_user.open("/library")
    await import_path(ui_user, docs)
    await eventually(lambda: bool(found(ui_user, "failed-document")), timeout_s=60)
    ui_user.find(marker="retry-button").click()
    await eventually(
        lambda: ui_user.notify.contains("notes.md failed again. The file's characters"),
        timeout_s=60,
    )
    assert len(found(ui_user, "failed-document")) == 1


async def test_upload_imports_the_uploaded_files(
    ui_user: User, tmp_path: Path, no_keys: None
) -> None:
    service = service_for(tmp_path / "home")
    register(service)
    await ui_user.open("/library")
    upload = next(iter(ui_user.find(marker="upload").elements))
    assert isinstance(upload, ui.upload)
    data = b"# Uploaded guide\n\nUploads land in the library like any other file.\n"
    await upload.handle_uploads([SmallFileUpload("../../guide.md", "text/markdown", data)])
    await eventually(lambda: import_state(ui_user) == "Import finished", timeout_s=60)
    docs = service.documents()
    assert [(d.title, d.source) for d in docs] == [("Uploaded guide", "guide.md")]
    kept = service.upload_path("guide.md")
    assert kept.read_bytes() == data  # the name cannot climb out of the uploads folder


async def test_remove_then_roll_back_to_the_older_snapshot(
    ui_user: User, home_copy: Path, no_keys: None
) -> None:
    service = service_for(home_copy)
    register(service)
    await ui_user.open("/library")
    assert len(found(ui_user, "remove-button")) == 2
    first = found(ui_user, "remove-button")[0]
    UserInteraction(ui_user, {first}, None).click()
    await ui_user.should_see(marker="confirm-dialog")
    assert "New questions will not find it" in texts_of(ui_user, "confirm-message")[0]
    ui_user.find(marker="confirm-yes").click()
    await eventually(lambda: len(service.documents()) == 1, timeout_s=30)
    await eventually(lambda: len(found(ui_user, "snapshot-row")) == 2)
    # Newest first: the removal, then the first import.
    assert texts_of(ui_user, "snapshot-changes") == ["−1 removed", "+2 added"]
    older = service.snapshots()[0]
    ui_user.find(marker="activate-button").click()
    await ui_user.should_see(marker="confirm-dialog")
    question = texts_of(ui_user, "confirm-message")[-1]
    assert question.startswith("Go back to the library as it was on ")
    assert question.endswith("(2 documents)?") and older.id not in question
    details = texts_of(ui_user, "confirm-detail")
    assert details == [
        "The 1 document removed since will be searched again.",
        "Nothing is deleted: the current version stays in this list and you can come back to it.",
    ]
    assert len(service.documents()) == 1  # nothing happens before the answer
    UserInteraction(ui_user, {found(ui_user, "confirm-yes")[-1]}, None).click()
    await eventually(lambda: len(service.documents()) == 2)
    assert service.snapshots()[0].active  # the older one (history is oldest first)
    assert ui_user.notify.contains("The library is back as it was on ")


async def test_rollback_can_be_declined_and_says_what_added_documents_become(
    ui_user: User, tmp_path: Path, docs: Path, no_keys: None
) -> None:
    service = service_for(tmp_path / "home")
    first = service.new_import([docs / "events.md"])
    await first.run()
    second = service.new_import([docs])
    await second.run()
    register(service)
    await ui_user.open("/library")
    assert texts_of(ui_user, "snapshot-changes") == ["+1 added", "+1 added"]
    ui_user.find(marker="activate-button").click()
    await ui_user.should_see(marker="confirm-dialog")
    assert texts_of(ui_user, "confirm-message")[0].endswith("(1 document)?")
    assert texts_of(ui_user, "confirm-detail")[0] == (
        "The 1 document added since will not be searched."
    )
    ui_user.find(marker="confirm-no").click()
    await anyio.sleep(0.3)
    assert service.snapshots()[-1].active and len(service.documents()) == 2


async def test_collections_can_be_created_switched_renamed_and_deleted(
    ui_user: User, home_copy: Path, no_keys: None
) -> None:
    service = service_for(home_copy)
    register(service)
    await ui_user.open("/library")
    ui_user.find(marker="collection-name").type("notes")
    ui_user.find(marker="collection-create").click()
    assert "notes" in service.collections()
    service.use_collection("notes")
    await ui_user.open("/library")
    await ui_user.should_see("Collection: notes")
    await ui_user.should_see(marker="no-documents")
    ui_user.find(marker="collection-name").type("papers")
    ui_user.find(marker="collection-rename").click()
    assert service.current_collection() == "papers" and "notes" not in service.collections()
    await ui_user.open("/library")
    ui_user.find(marker="collection-delete").click()
    assert texts_of(ui_user, "confirm-message")[0].startswith(
        "Delete the collection papers with its 0 documents and 0 snapshots?"
    )
    ui_user.find(marker="confirm-yes").click()
    await eventually(lambda: "papers" not in service.collections())
    ui_user.find(marker="collection-name").type("bad/name")
    ui_user.find(marker="collection-create").click()
    await ui_user.should_see("not a valid collection name")  # the notification says why


async def test_outline_and_direct_tools_work_without_a_model(
    ui_user: User, home_copy: Path, no_keys: None
) -> None:
    service = service_for(home_copy)
    register(service)
    await ui_user.open("/library")
    expansion = next(
        e for e in found(ui_user, "document-row")[0].descendants() if isinstance(e, ui.expansion)
    )
    expansion.set_value(True)
    await ui_user.should_see(marker="outline-entry")
    entries = texts_of(ui_user, "outline-entry")
    assert any(e.startswith("Emitters") for e in entries) or any(
        e.startswith("Backpressure") for e in entries
    )
    ui_user.find(marker="tool-term").type("listener")
    ui_user.find(marker="tool-run-scan").click()
    # should_see waits 0.3 s; a loaded machine takes longer for the first search (model load)
    await eventually(lambda: bool(found(ui_user, "tool-count")), timeout_s=30)
    assert texts_of(ui_user, "tool-count") == ["2 occurrences"]
    ui_user.find(marker="tool-query").type("highWaterMark backpressure")
    ui_user.find(marker="tool-run-search").click()
    await eventually(lambda: bool(found(ui_user, "tool-block")), timeout_s=30)
    await ui_user.should_see("Streams · Streams / Backpressure")


async def test_title_and_aliases_are_edited_from_the_library(
    ui_user: User, home_copy: Path, no_keys: None
) -> None:
    service = service_for(home_copy)
    register(service)
    await ui_user.open("/library")
    events = next(i for i, d in enumerate(service.documents()) if d.source == "events.md")
    UserInteraction(ui_user, {found(ui_user, "edit-button")[events]}, None).click()
    await ui_user.should_see(marker="edit-dialog")
    title = found(ui_user, "edit-title")[0]
    title.set_value("")
    ui_user.find(marker="edit-save").click()
    await ui_user.should_see("the title is empty")  # refused, said why, dialog stays
    assert len(service.snapshots()) == 1
    title.set_value("Node.js events")
    found(ui_user, "edit-aliases")[0].set_value("EventEmitter\n\nemitters ")
    ui_user.find(marker="edit-save").click()
    await eventually(lambda: len(found(ui_user, "snapshot-row")) == 2, timeout_s=30)
    await ui_user.should_see("Node.js events")
    assert texts_of(ui_user, "document-aliases") == ["Also known as: EventEmitter, emitters"]
    edited = next(d for d in service.documents() if d.source == "events.md")
    assert (edited.title, edited.aliases) == ("Node.js events", ("EventEmitter", "emitters"))
    hits = await tool_result(service, "list_documents", {"source": "eventemitter"})
    assert [d["title"] for d in hits["documents"]] == ["Node.js events"]


async def test_the_library_opens_again_after_an_import_of_this_session(
    ui_user: User, tmp_path: Path, docs: Path, no_keys: None
) -> None:
    """A finished import is reported by every new Library page without breaking it (it used
    to call back into the page before the page had its import panel: a 500 until restart)."""
    service = service_for(tmp_path / "home")
    register(service)
    await ui_user.open("/library")
    ui_user.find(marker="import-path").type(str(docs))
    ui_user.find(marker="import-button").click()
    await eventually(lambda: import_state(ui_user) == "Import finished", timeout_s=60)
    await ui_user.open("/library")
    await ui_user.should_see("Import finished")
    await ui_user.should_see(marker="documents")
    assert len(service.documents()) == 2


async def test_cleaning_up_old_snapshots_asks_first_and_says_what_it_did(
    ui_user: User, tmp_path: Path, docs: Path, no_keys: None
) -> None:
    service = service_for(tmp_path / "home")
    await service.new_import([docs / "events.md"]).run()
    await service.new_import([docs]).run()
    await service.save_settings({"snapshots": {"keep_last": 1}})  # the older one is now old
    register(service)
    await ui_user.open("/library")
    ui_user.find(marker="gc-button").click()
    await ui_user.should_see(marker="confirm-dialog")
    assert texts_of(ui_user, "confirm-message") == [
        "Delete the old snapshots, keeping the last 1? You will not be able to go back to the "
        "ones deleted."
    ]
    ui_user.find(marker="confirm-no").click()
    await anyio.sleep(0.3)
    assert len(service.snapshots()) == 2
    ui_user.find(marker="gc-button").click()
    UserInteraction(ui_user, {found(ui_user, "confirm-yes")[-1]}, None).click()
    await eventually(lambda: len(service.snapshots()) == 1)
    await eventually(lambda: ui_user.notify.contains("Cleaned up: 1 old snapshot deleted"))


async def test_direct_tools_say_what_to_type_and_why_nothing_came_in_the_ui_language(
    ui_user: User, home_copy: Path, no_keys: None
) -> None:
    """A blank field asks for the words; an empty result and a refused look-up are sentences
    in Chinese, the tool's own code and English message only under details (they were shown
    raw: "工具拒绝:invalid_argument:scan_term: `term` must not be blank …",
    "没有结果(no_match)")."""
    service = service_for(home_copy, ui={"language": "zh"})
    register(service)
    await ui_user.open("/library")
    ui_user.find(marker="tool-run-scan").click()
    await eventually(lambda: bool(found(ui_user, "tool-need")))
    assert texts_of(ui_user, "tool-need") == ["请先输入要查找的精确文本。"]
    ui_user.find(marker="tool-run-search").click()
    await eventually(lambda: texts_of(ui_user, "tool-need") == ["请先输入要搜索的词。"])

    ui_user.find(marker="tool-term").type("不存在的词语xyz")
    ui_user.find(marker="tool-run-scan").click()
    await eventually(lambda: bool(found(ui_user, "tool-empty")), timeout_s=30)
    assert texts_of(ui_user, "tool-empty") == ["没有找到。请换些词试试,或在全部文档中搜索。"]

    ui_user.find(marker="tool-query").type("stream " * 700)  # over the 4,000-character limit
    ui_user.find(marker="tool-run-search").click()
    await eventually(lambda: bool(found(ui_user, "tool-error")), timeout_s=30)
    shown = texts_of(ui_user, "tool-error")[0]
    assert shown == "这样输入无法查找。请用更少、更短的词再运行一次。"
    details = texts_of(ui_user, "error-details-text")
    assert details and details[0].startswith("invalid_argument: search_blocks:")
