"""The parse pool: admission in priority order, slots never leaked, documents as one pass."""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import anyio
import msgspec
import pytest

from actors import parse_pool
from actors.ingest import format_of
from actors.parse_pool import Chunking, Finished, ParsePool, PrioritySlots
from engine.chunker import chunk_document
from engine.config import parse_config
from engine.embedding.windows import layout_for, part_texts
from engine.errors import ChunkError
from engine.parsing import PARSER_VERSIONS, ParseError, ParseLimits, parse_file
from engine.tokens import TokenCounter
from index.fsutil import file_sha256
from index.prepared import prepare_document
from index.records import DocumentRecord, VectorLayout
from tests.corpus import DOCS, REPO

pytestmark = pytest.mark.anyio
T = TypeVar("T")


def untimed(record: DocumentRecord) -> DocumentRecord:
    """The record without the time its reading took (its import report's parse time)."""
    report = record.report
    if report is None:
        return record
    return msgspec.structs.replace(
        record, report=msgspec.structs.replace(report, parse_seconds=None)
    )


@pytest.fixture(params=["trio", "asyncio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_waiters_are_admitted_lowest_priority_first_then_in_arrival_order() -> None:
    slots = PrioritySlots(1)
    admitted: list[str] = []
    gate = anyio.Event()

    async def job(name: str, priority: tuple[int, ...]) -> None:
        async with slots.hold(slots.ask(priority)):
            admitted.append(name)
            await gate.wait()

    async with anyio.create_task_group() as tg:
        queue = [("first", (5,)), ("late-low", (9,)), ("urgent", (1,)), ("mid-a", (3,))]
        for name, priority in [*queue, ("mid-b", (3,))]:
            tg.start_soon(job, name, priority)
            await anyio.wait_all_tasks_blocked()
        gate.set()
    assert admitted == ["first", "urgent", "mid-a", "mid-b", "late-low"]


async def test_no_more_holders_than_capacity() -> None:
    slots = PrioritySlots(2)
    running = most = 0

    async def job() -> None:
        nonlocal running, most
        async with slots.hold(slots.ask((0,))):
            running += 1
            most = max(most, running)
            await anyio.sleep(0.01)
            running -= 1

    async with anyio.create_task_group() as tg:
        for _ in range(7):
            tg.start_soon(job)
    assert most == 2 and running == 0


async def test_a_cancelled_waiter_gives_up_its_place_and_a_granted_one_passes_its_slot_on() -> None:
    slots = PrioritySlots(1)
    holder = slots.ask((0,))
    queued = slots.ask((1,))
    after = slots.ask((2,))
    slots.withdraw(queued)  # gave up before its turn: not served, not counted
    slots.withdraw(holder)  # granted, never held: the slot goes to the next in line
    with anyio.fail_after(5):
        async with slots.hold(after):
            pass
    # nothing leaked: the one slot is free again, twice over
    for _ in range(2):
        with anyio.fail_after(5):
            async with slots.hold(slots.ask((0,))):
                pass


async def test_cancelling_a_holder_mid_wait_leaves_the_slots_whole() -> None:
    slots = PrioritySlots(1)
    release = anyio.Event()
    async with anyio.create_task_group() as tg:

        async def hold_until_released() -> None:
            async with slots.hold(slots.ask((0,))):
                await release.wait()

        tg.start_soon(hold_until_released)
        await anyio.wait_all_tasks_blocked()
        with anyio.move_on_after(0.05):  # waits for the busy slot, then is cancelled
            async with slots.hold(slots.ask((1,))):
                pytest.fail("admitted while the only slot was held")
        release.set()
    with anyio.fail_after(5):
        async with slots.hold(slots.ask((0,))):
            pass


def _chunking(path: Path, layout: VectorLayout | None = None) -> Chunking:
    return Chunking(
        content_hash=file_sha256(path),
        source=path.name,
        parser_version=PARSER_VERSIONS[format_of(path)],
        target_tokens=parse_config({}, {}).ingest.block_target_tokens,
        layout=layout,
    )


async def test_workers_return_documents_chunked_and_prepared_as_in_one_process(
    tmp_path: Path,
) -> None:
    pool = ParsePool(processes=2)
    limits = ParseLimits()
    pdf = DOCS / "lshort-zh-cn.pdf"  # long enough to be read as page ranges
    text = DOCS / "debian-reference.zh-cn.txt"
    results: dict[str, Finished] = {}

    sentences = layout_for("local", "auto")  # several vectors per block: the worker cuts them
    layouts = {pdf.name: sentences, text.name: None}

    async def finish(path: Path, rank: int) -> None:
        chunking = _chunking(path, layouts[path.name])
        results[path.name] = await pool.document(path, limits, rank, chunking)

    async with anyio.create_task_group() as tg:
        tg.start_soon(finish, pdf, 0)
        tg.start_soon(finish, text, 1)
    assert sentences.granularity == "sentence"
    assert results[text.name].parts is None and results[text.name].layout is None
    parts = results[pdf.name].parts
    assert parts is not None and results[pdf.name].layout == sentences
    texts, counts = part_texts(results[pdf.name].record, sentences)
    assert parts[0] == texts and parts[1].tolist() == counts.tolist()
    assert len(texts) > len(results[pdf.name].record.blocks) == len(counts)
    for path in (pdf, text):
        c = _chunking(path)
        expected = chunk_document(
            parse_file(path, limits),
            content_hash=c.content_hash,
            source=c.source,
            source_label=c.source,
            parser_version=c.parser_version,
            target_tokens=c.target_tokens,
            counter=TokenCounter(),
        )
        got = results[path.name]
        assert got.record.report is not None and got.record.report.parse_seconds is not None
        assert msgspec.json.encode(untimed(got.record)) == msgspec.json.encode(expected)
        assert got.prepared is not None
        got.prepared.check(got.record)  # the preparation is of this very record


async def test_only_a_pdf_too_big_to_be_surely_short_is_planned_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only a PDF can be read as page ranges, and only one of more than SMALL_PDF_BYTES can
    have pages enough for it: only such a file asks a worker for a plan first. A folder of
    small notes or small PDFs would otherwise pay two round trips to the workers for each."""
    called: list[str] = []
    in_process = parse_pool._in_process

    async def counted(func: Callable[..., T], *args: object) -> T:
        called.append(func.__name__)
        return await in_process(func, *args)

    monkeypatch.setattr(parse_pool, "_in_process", counted)
    pool = ParsePool(processes=1)
    realworld = REPO / "tests" / "realworld" / "pdf"
    small_pdf, bigger_pdf = (
        realworld / "pdfjs-issue6069.pdf",
        realworld / "pymupdf-chinese-tables.pdf",
    )
    assert small_pdf.stat().st_size <= parse_pool.SMALL_PDF_BYTES < bigger_pdf.stat().st_size
    for path, expected in (
        (DOCS / "nodejs-md" / "readline.md", ["_parse_whole"]),
        (small_pdf, ["_parse_whole"]),
        (bigger_pdf, ["_plan", "_parse_whole"]),  # one page: too short to split
        (DOCS / "lshort-zh-cn.pdf", ["_plan", "_pages", "_pages", "_pages", "_assemble"]),
    ):
        called.clear()
        finished = await pool.document(path, ParseLimits(), 0, _chunking(path))
        assert called == expected and finished.record.blocks
    # the size the importer found when it listed the file decides, without another look
    called.clear()
    size = small_pdf.stat().st_size
    await pool.document(bigger_pdf, ParseLimits(), 0, _chunking(bigger_pdf), size=size)
    assert called == ["_parse_whole"]


async def test_a_long_pdf_can_come_back_unprepared_and_be_prepared_apart_alike() -> None:
    """A PDF read as page ranges, asked to be prepared apart, comes back without its
    preparation; the pool's preparation of its record is the one a single process makes (and
    the build accepts it for that record)."""
    pool = ParsePool(processes=2)
    pdf = DOCS / "lshort-zh-cn.pdf"
    chunking = dataclasses.replace(_chunking(pdf), prepare_apart=True)
    finished = await pool.document(pdf, ParseLimits(), 0, chunking)
    assert finished.prepared is None
    apart = await pool.prepare(finished.record, 0)
    apart.check(finished.record)
    alone = prepare_document(finished.record)
    assert apart.folded.data == alone.folded.data
    assert apart.folded.lengths.tolist() == alone.folded.lengths.tolist()
    assert apart.keys.tolist() == alone.keys.tolist()
    assert apart.counts.terms == alone.counts.terms
    for mine, theirs in zip(apart.counts[1:], alone.counts[1:], strict=True):
        assert mine.tolist() == theirs.tolist()
    assert apart.blocks.text == alone.blocks.text


async def test_a_failing_document_fails_with_its_reason_and_the_pool_goes_on(
    tmp_path: Path,
) -> None:
    pool = ParsePool(processes=2)
    limits = ParseLimits()
    pdf = DOCS / "lshort-zh-cn.pdf"
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(pdf.read_bytes()[:200_000])
    with pytest.raises(ParseError):
        await pool.document(broken, limits, 0, _chunking(broken))
    # a failure while chunking (here: settings the chunker refuses) is this document's alone
    notes = DOCS / "debian-reference.zh-cn.txt"
    with pytest.raises(ChunkError) as info:
        await pool.document(
            notes, limits, 1, dataclasses.replace(_chunking(notes), target_tokens=0)
        )
    assert info.value.reason == "chunk_error"
    assert "target_tokens must be positive" in info.value.message
    copy = tmp_path / "again.pdf"
    shutil.copy2(pdf, copy)
    with anyio.fail_after(120):
        assert (await pool.document(copy, limits, 2, _chunking(copy))).record.pages == 139


def _worker_pids() -> list[int]:
    """This process's child processes (the parse workers anyio keeps), from /proc."""
    return [
        int(pid)
        for task in Path("/proc/self/task").iterdir()
        for pid in (task / "children").read_text().split()
    ]


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:  # reaped
        return False


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc (Linux)")
async def test_a_worker_that_died_while_idle_does_not_fail_the_next_document(
    tmp_path: Path,
) -> None:
    # Killed from outside between two imports (out of memory, a task manager): the next
    # document goes to another worker instead of being reported as crashing the reader.
    path = shutil.copy(DOCS / "nodejs-md" / "events.md", tmp_path / "events.md")
    pool = ParsePool(processes=1)
    limits = ParseLimits()
    first = await pool.document(path, limits, 0, _chunking(path))
    pids = _worker_pids()
    assert pids, "the worker should stay up between documents"
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    with anyio.fail_after(10):
        while any(_alive(pid) for pid in pids):
            await anyio.sleep(0.01)
    again = await pool.document(path, limits, 0, _chunking(path))
    assert untimed(again.record) == untimed(first.record)


async def test_a_long_pdfs_pages_are_counted_as_they_are_read_before_the_document_is_done() -> None:
    pool = ParsePool(processes=2)
    pdf = DOCS / "debian-reference.en.pdf"  # 261 pages: read as page ranges
    counted: list[tuple[float, int, int]] = []
    started = anyio.current_time()

    def on_pages(read: int, total: int) -> None:
        counted.append((anyio.current_time() - started, read, total))

    finished = await pool.document(pdf, ParseLimits(), 0, _chunking(pdf), on_pages=on_pages)
    done_at = anyio.current_time() - started
    assert finished.record.pages == 261
    assert counted[0][1:] == (0, 261)  # the page count is known before any page is read
    reads = [read for _, read, _ in counted]
    assert reads == sorted(reads) and reads[-1] == 261 and len(set(reads)) > 3
    first_pages_at = next(at for at, read, _ in counted if read > 0)
    # pages arrive range by range while the rest is read, assembled and chunked
    assert first_pages_at < done_at and counted[-1][0] < done_at
