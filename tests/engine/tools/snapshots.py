"""Small real snapshots for the tool tests: hand-written documents chunked by the real chunker
(or hand-built records), vectors from a real embedding provider, written by build_snapshot;
and a small bilingual library of such documents."""

from __future__ import annotations

import functools
import hashlib
import itertools
from collections.abc import Sequence
from pathlib import Path

import anyio
import anyio.to_thread
import numpy as np
import numpy.typing as npt

from engine.chunker import chunk_document
from engine.embedding import EmbeddingProvider, LocalEmbedding, OpenAICompatibleEmbedding
from engine.parsing.model import Paragraph, ParsedDocument, ParsedSection
from engine.tokens import TokenCounter
from engine.tools import ToolContext, default_retrieval_params
from index.records import (
    BlockRecord,
    DocumentRecord,
    EmbeddingSpec,
    RetrievalParams,
    SectionRecord,
    SnapshotManifest,
)
from index.snapshot import Snapshot, build_snapshot
from tests.servers.embedding_server import EmbeddingServer

COUNTER = TokenCounter()
_serial = itertools.count()


def section(title: str, depth: int, *texts: str) -> ParsedSection:
    """A section whose first paragraph is its heading line, as parsers emit it."""
    return ParsedSection(
        title=title, depth=depth, paragraphs=tuple(Paragraph(t) for t in (title, *texts))
    )


def document(title: str, *sections: ParsedSection, lang: str = "en") -> ParsedDocument:
    return ParsedDocument(title=title, lang=lang, format="markdown", sections=sections)


def record(parsed: ParsedDocument, source: str, *, target_tokens: int = 48) -> DocumentRecord:
    """`parsed` through the real chunker; the content hash derives from the source name."""
    return chunk_document(
        parsed,
        content_hash=hashlib.sha256(source.encode()).hexdigest(),
        source=source,
        source_label=source,
        parser_version="test-1",
        target_tokens=target_tokens,
        counter=COUNTER,
    )


def plain(name: str, texts: list[str]) -> DocumentRecord:
    """One section holding one block per text, exactly as given."""
    blocks = tuple(
        BlockRecord(block_index=i, block_id=f"{name}-{i}", section=0, text=t, tokens=1)
        for i, t in enumerate(texts)
    )
    root = SectionRecord(
        path=name,
        title=name,
        ordinal=0,
        depth=1,
        parent=-1,
        direct_blocks=len(texts),
        subtree_blocks=len(texts),
        direct_tokens=len(texts),
        subtree_tokens=len(texts),
        first_sentence="",
    )
    return DocumentRecord(
        doc_id=f"d{name}",
        content_hash=name.encode().hex().ljust(64, "0"),
        source=f"{name}.txt",
        source_label=f"{name}.txt",
        title=name,
        sections=(root,),
        blocks=blocks,
    )


def embedding_text(doc: DocumentRecord, block_index: int) -> str:
    """What ingest embeds for a block (actors/ingest.py): section title, then the text."""
    block = doc.blocks[block_index]
    title = doc.sections[block.section].title
    return block.text if block.text.startswith(title) else f"{title}\n{block.text}"


def write_snapshot(
    directory: Path,
    documents: Sequence[DocumentRecord],
    embedder: EmbeddingProvider | None = None,
    *,
    params: RetrievalParams | None = None,
) -> Path:
    """Build a snapshot of `documents` in `directory`; vectors from `embedder` (none without)."""
    params = params or default_retrieval_params()
    spec: EmbeddingSpec | None = embedder.spec if embedder is not None else None
    vectors: list[npt.NDArray[np.float32]]
    if embedder is None:
        vectors = [np.zeros((len(doc.blocks), 0), dtype=np.float32) for doc in documents]
    else:
        texts = [embedding_text(d, i) for d in documents for i in range(len(d.blocks))]
        rows = anyio.run(embedder.embed, texts).vectors if texts else np.zeros((0, 0), np.float32)
        starts = np.cumsum([0] + [len(d.blocks) for d in documents])
        vectors = [rows[a:b] for a, b in itertools.pairwise(starts)]
    manifest = SnapshotManifest(
        snapshot_id=f"test-{next(_serial)}",
        parent_id=None,
        collection="test",
        status="ready",
        created_at="2026-01-01T00:00:00Z",
        embedding=spec,
        retrieval=params,
    )
    build_snapshot(
        directory,
        manifest,
        documents,
        vectors,
        k1=params.bm25_k1,
        b=params.bm25_b,
        exact_search_max_blocks=params.exact_search_max_blocks,
    )
    return directory


async def write_snapshot_async(
    directory: Path,
    documents: Sequence[DocumentRecord],
    embedder: EmbeddingProvider | None = None,
    *,
    params: RetrievalParams | None = None,
) -> Path:
    """write_snapshot from inside a running event loop (it embeds on a loop of its own)."""
    build = functools.partial(write_snapshot, directory, documents, embedder, params=params)
    return await anyio.to_thread.run_sync(build)


def server_embedder(
    server: EmbeddingServer, model: str = "test-embed"
) -> OpenAICompatibleEmbedding:
    return OpenAICompatibleEmbedding(
        base_url=server.url, model=model, dimensions=server.dimensions, api_key="sk-test-key"
    )


def context(snapshot: Snapshot | None, embedder: EmbeddingProvider | None = None) -> ToolContext:
    """A tool context; without an embedder the built-in model stands in (never loaded unless
    search_blocks runs, which then fails for a snapshot built without it)."""
    return ToolContext(snapshot=snapshot, embedder=embedder or LocalEmbedding(), counter=COUNTER)


EVENTS = document(
    "Events",
    section(
        "Events", 1, "Much of the Node.js core API is built around an asynchronous event model."
    ),
    section(
        "Class: EventEmitter", 2, "The EventEmitter class is defined by the node:events module."
    ),
    section(
        "emitter.setMaxListeners(n)",
        3,
        "By default EventEmitters will print a warning if more than 10 listeners are added "
        "for a particular event. This is a useful default that helps finding memory leaks.",
        "The value can be set to Infinity (or 0) to indicate an unlimited number of listeners.",
    ),
    section("Error events", 2, "When an error occurs the EventEmitter emits an 'error' event."),
    section("Notes", 2, "Listeners are called synchronously in the order registered."),
    section("Notes", 2, "A second notes section with the same title as the first one."),
)

HANDBOOK = document(
    "Debian 参考手册",
    section("第 1 章 教程", 1, "本章介绍控制台的基础知识。"),
    section("1.1 控制台基础", 2, "按下左 Alt 键和 F1 到 F6 之一的键在虚拟控制台间切换。"),
    section(
        "1.1.8 怎样关闭系统", 3, "在普通多用户模式下，可以使用命令行关闭系统。# shutdown -h now"
    ),
    section("1.2 文件系统", 2, "在 GNU/Linux 中，所有文件都被组织在一个大树里。"),
    section("第 2 章 软件包管理", 1, "APT 是 Debian 的软件包管理工具。"),
    lang="zh",
)

FAQ = document(
    "Library and Extension FAQ",
    section("Library and Extension FAQ", 1),
    section("Threads", 2),
    section("How do I program using threads?", 3, "Be sure to use the threading module."),
    section("Can't we get rid of the Global Interpreter Lock?", 3, "The GIL is a hindrance."),
    section("Files", 2, "Use os.remove(filename) or os.unlink(filename) to delete a file."),
)


def library() -> list[DocumentRecord]:
    return [
        record(EVENTS, "nodejs-md/events.md"),
        record(HANDBOOK, "debian-reference.zh-cn.txt"),
        record(FAQ, "python-faq/library.html"),
    ]


def parsed(name: str) -> ParsedDocument:
    return {"events": EVENTS, "handbook": HANDBOOK, "faq": FAQ}[name]
