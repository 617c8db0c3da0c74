"""What the pages need from App: source views, settings, imports, earlier answers, traces.
Settings are saved only when valid."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pymupdf
import pytest

from actors import SOURCE_RADIUS, App, ConfigError
from tests.web.conftest import service_for, tool_result
from web.source_viewer import highlight_fragments

pytestmark = pytest.mark.anyio
mupdf: Any = pymupdf


def make_pdf(path: Path) -> None:
    pdf = mupdf.open()
    for text in (
        "Chapter one. Listeners run in the order in which they were registered.",
        "Chapter two. The drain event tells a producer to resume writing after backpressure.",
    ):
        page = pdf.new_page()
        page.insert_textbox(mupdf.Rect(72, 72, 520, 700), text, fontsize=12)
    pdf.save(str(path))


def yellow_pixels(png: bytes) -> int:
    pix = mupdf.Pixmap(png)
    data, n = pix.samples, pix.n
    return sum(
        1
        for i in range(0, len(data), n)
        if data[i] > 200 and data[i + 1] > 200 and data[i + 2] < 150
    )


async def imported(service: App, *paths: Path) -> None:
    job = service.new_import(list(paths))
    await job.run()
    assert job.error is None and job.result is not None, job.error


async def test_pdf_source_has_its_page_drawn_with_the_block_marked(
    tmp_path: Path, no_keys: None
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    pdf = folder / "guide.pdf"
    make_pdf(pdf)
    service = service_for(tmp_path / "home")
    await imported(service, folder)
    hits = (await tool_result(service, "scan_term", {"term": "drain event"}))["hits"]
    assert len(hits) == 1
    view = await service.source_view(hits[0]["doc_id"], hits[0]["block_id"])
    cited = [b for b in view.blocks if b.cited]
    assert view.found and view.format == "pdf" and len(cited) == 1
    assert view.page == cited[0].page_start and view.page in (1, 2)
    assert view.pdf_path == str(pdf.resolve())
    first, last = cited[0].page_start or 0, cited[0].page_end or 0
    assert view.rects and {r[0] for r in view.rects} == set(range(first, last + 1))
    fragments = highlight_fragments(cited[0].text)
    marked = await service.render_pdf_page(view.pdf_path, view.page, fragments, view.rects)
    searched = await service.render_pdf_page(view.pdf_path, view.page, fragments)
    plain = await service.render_pdf_page(view.pdf_path, view.page, [])
    assert marked.png.startswith(b"\x89PNG") and plain.png.startswith(b"\x89PNG")
    assert (marked.marked_by, searched.marked_by, plain.marked_by) == ("rects", "text", "none")
    assert yellow_pixels(marked.png) > 200 and yellow_pixels(plain.png) == 0
    assert yellow_pixels(searched.png) > 200
    assert pdf.read_bytes().startswith(b"%PDF")  # the original is never written

    with pdf.open("ab") as f:
        f.write(b"\n% edited after the import\n")
    changed = await service.source_view(hits[0]["doc_id"], hits[0]["block_id"])
    assert changed.found and changed.pdf_path is None
    assert "changed since it was imported" in changed.message


async def test_source_context_is_the_cited_block_among_its_neighbours_in_the_document(
    tmp_path: Path, no_keys: None
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    long_section = "\n\n".join(
        f"Paragraph {i} talks about topic number {i} in enough words to fill a block." * 3
        for i in range(12)
    )
    (folder / "long.md").write_text(
        f"# Long\n\n## Many\n\n{long_section}\n\n## Other\n\nA different section entirely.\n",
        encoding="utf-8",
    )
    service = service_for(tmp_path / "home", ingest={"block_target_tokens": 40})
    await imported(service, folder)
    blocks = (await tool_result(service, "list_blocks", {"doc_id": service.documents()[0].doc_id}))[
        "blocks"
    ]
    many = [b for b in blocks if b["section"].endswith("Many")]
    assert len(many) > 2 * SOURCE_RADIUS + 1
    middle = many[len(many) // 2]
    view = await service.source_view(middle["doc_id"], middle["block_id"])
    assert len(view.blocks) == 2 * SOURCE_RADIUS + 1
    assert [b.block_id for b in view.blocks if b.cited] == [middle["block_id"]]
    assert view.blocks[SOURCE_RADIUS].cited
    ids = [b["block_id"] for b in blocks]
    at = ids.index(middle["block_id"])
    assert [b.block_id for b in view.blocks] == ids[at - SOURCE_RADIUS : at + SOURCE_RADIUS + 1]
    # The context runs on into the next section, each block knowing its section.
    last = many[-1]
    edge = await service.source_view(last["doc_id"], last["block_id"])
    assert edge.blocks[-1].block_id == blocks[-1]["block_id"] and not edge.blocks[-1].cited
    assert edge.blocks[-1].section.endswith("Other")
    assert [b.section.endswith("Many") for b in edge.blocks].count(False) == 1


async def test_a_collected_snapshot_is_said_plainly(home_copy: Path, no_keys: None) -> None:
    service = service_for(home_copy)
    view = await service.source_view("d0", "b0", snapshot_id="s20000101-000000-000000-dead")
    assert not view.found and "cleaned up" in view.message


async def test_invalid_settings_are_refused_and_the_file_is_untouched(
    tmp_path: Path, no_keys: None
) -> None:
    service = service_for(tmp_path / "home", budget={"max_tool_calls": 4})
    before = service.data.config_file.read_bytes()
    with pytest.raises(ConfigError, match=r"retrieval.top_k = 0"):
        await service.save_settings({"retrieval": {"top_k": 0}})
    assert service.data.config_file.read_bytes() == before
    await service.save_settings({"chat": {"price": {"output": 2.0}}})
    assert service.config.chat.price.output == 2.0
    assert service.config.budget.max_tool_calls == 4  # untouched sections are kept


async def test_embedding_settings_cannot_change_under_a_running_import(
    tmp_path: Path, docs: Path, no_keys: None
) -> None:
    service = service_for(tmp_path / "home")
    job = service.new_import([docs])  # created, not finished: counts as running
    with pytest.raises(ConfigError, match="while an import is running"):
        await service.save_settings({"embedding": {"provider": "openai_compatible"}})
    job.cancel()
    await job.run()
    await service.save_settings({"embedding": {"provider": "openai_compatible"}})
    assert service.config.embedding.provider == "openai_compatible"


async def test_earlier_answers_get_their_citations_back(home_copy: Path, no_keys: None) -> None:
    service = service_for(home_copy)
    hit = (await tool_result(service, "scan_term", {"term": "synchronously"}))["hits"][0]
    snapshot = service.snapshots()[0].id
    answer = f"They run in order.【来源:{hit['citation']}】 Also.【来源:dnone#b9】"
    citations = service.history_citations(answer, snapshot)
    assert [(c.index, c.valid, c.title) for c in citations] == [
        (1, True, "Node events"),
        (2, False, ""),
    ]
    assert service.numbered(answer) == "They run in order.[1] Also.[2]"


async def test_an_import_started_from_the_ui_is_traced_like_a_cli_import(
    tmp_path: Path, no_keys: None
) -> None:
    from actors.tracing import list_traces

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "notes.md").write_text("# Notes\n\nListeners run in order.\n", encoding="utf-8")
    service = service_for(tmp_path / "home")
    await imported(service, folder)
    traces = list_traces(service, kind="ingest")
    assert len(traces) == 1 and traces[0].status == "ok"
