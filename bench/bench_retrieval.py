"""Retrieval and tool benchmarks: search_blocks latency, BM25 against bm25s (and tantivy when
installed; bm25s with numba when installed), exact scan throughput and the scan_term tool
against bytes.find over the folded buffer, and list_blocks / token-estimate cost.

Snapshots are bench.synthetic's: the corpus's text paragraphs replicated to 10k-100k blocks,
each copy perturbed by a distinct marker token (`r{doc}x{block}`) so nothing deduplicates, with
seeded random unit vectors. Query embedding is excluded from every latency: query vectors are
made up front. Benchmarks write only into temporary directories.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import itertools
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import anyio
import msgspec
import numpy as np
import numpy.typing as npt

from bench.runner import CORPUS, Report
from bench.synthetic import build_synthetic, corpus_paragraphs, kept_synthetic
from engine.embedding import EmbeddingResult
from engine.tokens import TokenCounter
from engine.tools import ToolContext, run_tool
from engine.tools.contracts import BlocksResult, ListBlocksArgs
from engine.tools.executor import ToolOutcome, finish
from engine.tools.list_blocks import list_blocks
from engine.tools.retrieval import DEFAULT_FUSION, search
from index.records import BlockRecord, DocumentRecord, EmbeddingSpec, SectionRecord
from index.snapshot import Snapshot, build_snapshot
from index.textnorm import document_tokens, query_tokens
from index.vectors import load_usearch

brute_force = load_usearch().index.search  # through the gate: onnxruntime first

_T = TypeVar("_T")

EXTRA_QUERIES = [
    "package configuration",
    "how do I remove an event listener",
    "软件包管理",
    "network interface names",
    "worker threads share memory",
    "控制台 切换",
    "DNS lookup getaddrinfo",
    "shell redirection",
]


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def _p50(samples: Sequence[float]) -> float:
    return _ms(statistics.median(samples))


def _p99(samples: Sequence[float]) -> float:
    return _ms(float(np.percentile(samples, 99)))


def _queries() -> list[str]:
    gold = [json.loads(line)["question"] for line in (CORPUS / "gold.jsonl").open(encoding="utf-8")]
    return gold + EXTRA_QUERIES


# The latency snapshots' vectors cluster around topics (bench.synthetic), about this many
# blocks to a topic, and each query is made near one stored vector: NEAR_WEIGHT of it plus
# noise, so ~0.8 from it and ~0.29 from the other vectors of its topic, above the 0.2 floor.
# The vector list then has a topic's worth of candidates to order, found by HNSW as on real
# embeddings (on uniformly random vectors HNSW finds next to none of a query's neighbours, and
# a random query is ~0.04 from everything, so the floor empties the list).
BLOCKS_PER_TOPIC = 100
NEAR_WEIGHT = 0.8


def _near_vectors(matrix: npt.NDArray[np.float32], n: int, seed: int) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    near = matrix[rng.integers(0, len(matrix), size=n)]
    noise = rng.standard_normal(near.shape).astype(np.float32)
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    v = NEAR_WEIGHT * near + np.sqrt(1.0 - NEAR_WEIGHT**2) * noise
    return np.asarray(v / np.linalg.norm(v, axis=1, keepdims=True), dtype=np.float32)


def _timed(func: Callable[[], object], repeat: int = 1) -> list[float]:
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        func()
        samples.append(time.perf_counter() - t0)
    return samples


def _each(
    func: Callable[[_T], object],
    items: Sequence[_T],
    rounds: int = 3,
    cpu: list[float] | None = None,
) -> list[float]:
    """Wall time of func(item) for every item, `rounds` times over; with `cpu`, this
    process's CPU time (every thread's) of each call is appended to it: other processes on a
    shared machine stretch wall time, much less a process's own CPU time."""
    samples = []
    for _ in range(rounds):
        for item in items:
            c0, t0 = time.process_time(), time.perf_counter()
            func(item)
            samples.append(time.perf_counter() - t0)
            if cpu is not None:
                cpu.append(time.process_time() - c0)
    return samples


class _Precomputed:
    """An embedding provider that answers from vectors made up front (embedding excluded)."""

    def __init__(self, spec: EmbeddingSpec, vectors: dict[str, npt.NDArray[np.float32]]) -> None:
        self.spec = spec
        self._vectors = vectors

    async def embed(self, texts: Sequence[str]) -> EmbeddingResult:
        return EmbeddingResult(vectors=np.stack([self._vectors[t] for t in texts]), tokens=0)

    async def aclose(self) -> None:
        pass


# -- search_blocks latency ---------------------------------------------------------------------


# Vectors per block of the shared corpus imported with the shipped sentence layout (19,046
# vectors for 3,083 blocks: mean 6.2, median 6, p90 11), so the sentence rows store 6 per block.
SENTENCE_PARTS = 6


def search_latency(report: Report, quick: bool) -> None:
    from engine.config import RetrievalSettings

    report.title = "search_blocks latency (query embedding excluded)"
    # The shipped rule: exact vector search up to exact_search_max_blocks vectors, HNSW above.
    shipped = RetrievalSettings().exact_search_max_blocks
    threshold = 5_000 if quick else shipped
    # (blocks, vectors per block): one vector per block either side of the threshold, and the
    # default sentence layout (several vectors per block) at 10k and 100k.
    cases = (
        [(2_000, 1), (10_000, 1), (2_000, 3)]
        if quick
        else [(10_000, 1), (30_000, 1), (100_000, 1), (10_000, SENTENCE_PARTS),
              (100_000, SENTENCE_PARTS)]
    )  # fmt: skip
    wanted = os.environ.get("CITEWISE_SEARCH_CASES")  # e.g. "100000x6,30000x1"
    if wanted:
        cases = [(int(a), int(b)) for a, b in (c.split("x") for c in wanted.split(","))]
    queries = _queries()
    rows: list[list[Any]] = []
    origins: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="citewise-bench-") as tmp:
        for n, parts in cases:
            layout = {"parts_per_block": parts} if parts > 1 else {}
            directory, manifest, build_s, origin = kept_synthetic(
                Path(tmp),
                n,
                exact_search_max_blocks=threshold,
                topics=max(1, n // BLOCKS_PER_TOPIC),
                **layout,
            )
            origins.add(origin)
            report.figure(f"build_s_{n}x{parts}", round(build_s, 1))
            with Snapshot.open(directory) as snap:
                row = _measure_search(report, snap, n, queries, manifest.vector_index, parts)
            rows.append([*row[:2], parts, n * parts, round(build_s, 1), *row[2:]])
            if directory.is_relative_to(tmp):
                shutil.rmtree(directory, ignore_errors=True)
    report.table(
        f"Latency by collection size (ms; exact search up to {threshold} vectors, HNSW above)",
        [
            "blocks",
            "vector index",
            "vectors per block",
            "vectors",
            "build s",
            "first search",
            "ranking p50",
            "ranking p99",
            "ranking p50, section context off",
            "vector candidates over the floor (median)",
            "keyword list p50",
            "vector list p50 (as shipped)",
            "usearch exact p50",
            "numpy brute force p50",
            "tool p50 (payload + JSON + tokens)",
            "tool p99",
            "ranking CPU p50",
            "vector list CPU p50",
        ],
        rows,
    )
    for row in rows:
        if row[0] == max(r[0] for r in rows):
            label = f"{row[0]} blocks, {row[2]} vector(s) per block"
            report.target(f"search_blocks ranking p50 at {label} (ms)", row[6], 10.0)
            report.target(f"search_blocks tool p50 at {label} (ms)", row[14], 10.0)
            report.target(f"search_blocks ranking CPU p50 at {label} (ms)", row[16], 10.0)
    report.notes.append(
        "ranking = engine.tools.retrieval.search (keyword list, vector list, RRF) on a query "
        "vector made up front; tool = run_tool('search_blocks') with a provider that returns "
        "that vector at once, so it adds block payloads, JSON encoding and the DeepSeek token "
        "count of the result. Vectors are random around topics (one per "
        f"{BLOCKS_PER_TOPIC} blocks, as real embeddings cluster by subject): latency, not "
        f"quality; each query vector is {NEAR_WEIGHT} of a stored one plus noise, so its "
        "topic's blocks pass the 0.2 floor and the vector list is full and ordered (section "
        "context on: the shipped weight; off: weight 0, same run). First search = the "
        "first search after Snapshot.open in this process (usearch already imported). "
        f"Sentence rows store {SENTENCE_PARTS} vectors per block, the mean of the shared "
        "corpus imported with the shipped sentence layout; the threshold counts vectors, so "
        f"they use HNSW above {threshold // SENTENCE_PARTS} blocks. numpy brute force = "
        "float32 matrix product and argpartition over every vector (no block grouping). "
        "CPU p50 = the process's own CPU time (time.process_time, every thread) of the same "
        "calls: on a shared machine other processes stretch wall time, far less that."
        f" Snapshots: {'; '.join(sorted(origins))} (CITEWISE_BENCH_SNAPSHOTS keeps them; build "
        "s is the building run's)."
    )


def _measure_search(
    report: Report, snap: Snapshot, n: int, queries: list[str], kind: str, parts: int = 1
) -> list[Any]:
    params = snap.manifest.retrieval
    assert params is not None and snap.manifest.embedding is not None
    matrix = np.concatenate([snap.doc_vectors(d) for d in range(len(snap.documents))])
    vectors = _near_vectors(matrix, len(queries), seed=n)
    by_text = dict(zip(queries, vectors, strict=True))

    first = _timed(lambda: search(snap, queries[0], vectors[0], None, params))[0]

    pairs = list(zip(queries, vectors, strict=True))

    def hybrid(pair: tuple[str, npt.NDArray[np.float32]]) -> object:
        return search(snap, pair[0], pair[1], None, params)

    def keyword_list(pair: tuple[str, npt.NDArray[np.float32]]) -> object:
        return search(snap, pair[0], pair[1], None, params, "keyword")

    halves = matrix.astype(np.float16)
    no_section = msgspec.structs.replace(DEFAULT_FUSION, section_context_weight=0.0)

    def without_section(pair: tuple[str, npt.NDArray[np.float32]]) -> object:
        return search(snap, pair[0], pair[1], None, params, "hybrid", no_section)

    def shipped(v: npt.NDArray[np.float32]) -> object:
        return snap.vector_search(v, 60)

    def usearch_exact(v: npt.NDArray[np.float32]) -> object:
        return brute_force(halves, v.astype(np.float16), 60, "cos", exact=True)

    def numpy_exact(v: npt.NDArray[np.float32]) -> object:
        return np.argpartition(-(matrix @ v), 60)[:60]

    ranking_cpu: list[float] = []
    vector_cpu: list[float] = []
    ranking, keyword = _each(hybrid, pairs, cpu=ranking_cpu), _each(keyword_list, pairs)
    section_off = _each(without_section, pairs)
    passed = statistics.median(search(snap, q, v, None, params, "vector").trace.vector_candidates
                               for q, v in pairs)  # fmt: skip
    vector_list = _each(shipped, list(vectors), cpu=vector_cpu)
    exact = _each(usearch_exact, list(vectors))
    numpy_bf = _each(numpy_exact, list(vectors))

    ctx = ToolContext(snapshot=snap, embedder=_Precomputed(snap.manifest.embedding, by_text),
                      counter=TokenCounter())  # fmt: skip

    async def tool_samples() -> list[float]:
        out = []
        for _ in range(3):
            for q in queries:
                t0 = time.perf_counter()
                outcome = await run_tool(ctx, "search_blocks", {"query": q})
                out.append(time.perf_counter() - t0)
                assert outcome.ok, outcome.json
        return out

    tool = anyio.run(tool_samples)
    report.figure(f"ranking_p50_ms_{n}x{parts}", _p50(ranking))
    report.figure(f"tool_p50_ms_{n}x{parts}", _p50(tool))
    return [
        n,
        kind,
        _ms(first),
        _p50(ranking),
        _p99(ranking),
        _p50(section_off),
        passed,
        _p50(keyword),
        _p50(vector_list),
        _p50(exact),
        _p50(numpy_bf),
        _p50(tool),
        _p99(tool),
        _p50(ranking_cpu),
        _p50(vector_cpu),
    ]


# -- BM25 against its peers --------------------------------------------------------------------


def bm25_peers(report: Report, quick: bool) -> None:
    import bm25s

    report.title = "BM25 top-10: Citewise (roaring postings) against bm25s and tantivy"
    n = 10_000 if quick else 100_000
    queries = [query_tokens(q) for q in _queries()]
    with tempfile.TemporaryDirectory(prefix="citewise-bench-") as tmp:
        directory = Path(tmp) / "s"
        build_synthetic(directory, n)
        with Snapshot.open(directory) as snap:
            params = snap.manifest.retrieval
            assert params is not None
            corpus = _block_tokens(snap)
            t0 = time.perf_counter()
            retriever = bm25s.BM25(k1=params.bm25_k1, b=params.bm25_b, method="lucene")
            retriever.index(corpus, show_progress=False)
            report.figure("bm25s_index_s", round(time.perf_counter() - t0, 2))
            numba = _numba_retriever(bm25s, corpus, params.bm25_k1, params.bm25_b)

            for q in queries:  # warm the term dictionary pages
                snap.bm25_scores(q)

            def citewise(q: list[str]) -> object:
                return _top10(snap.bm25_scores(q))

            def reference(q: list[str]) -> object:
                return retriever.retrieve([q], k=10, show_progress=False, n_threads=1)

            ours, theirs = _each(citewise, queries), _each(reference, queries)
            agree = _agreement(snap, retriever, queries)
            rows: list[list[Any]] = [
                ["citewise", _p50(ours), _p99(ours), "—"],
                ["bm25s (numpy backend)", _p50(theirs), _p99(theirs), agree],
            ]
            if numba is not None:

                def compiled(q: list[str]) -> object:
                    return numba.retrieve([q], k=10, show_progress=False, n_threads=1)

                compiled(queries[0])  # the first call compiles (JIT), as a server's warm-up
                fast = _each(compiled, queries)
                rows.append(["bm25s (numba backend)", _p50(fast), _p99(fast),
                             _agreement(snap, numba, queries)])  # fmt: skip
            else:
                report.notes.append(
                    "numba is not installed here (it is in the dev extra): bm25s ran with its "
                    "numpy backend only, which is not its fast path."
                )
            tantivy_row = _tantivy(corpus, queries)
            if tantivy_row is not None:
                rows.append(tantivy_row)
    report.table(
        f"BM25 top-10 at {n} blocks (ms per query)",
        ["engine", "p50", "p99", "top-10 equal to citewise's"],
        rows,
    )
    fastest = min(r[1] for r in rows[1:])
    report.figure("citewise_p50_ms", rows[0][1])
    report.figure("fastest_peer_p50_ms", fastest)
    report.target("citewise p50 / fastest peer p50", rows[0][1] / fastest, 2.0)
    report.notes.append(
        "Same tokens for every engine: the index's own document_tokens of 'section title\\n"
        "text' per block, and query_tokens per query (tantivy gets them joined by spaces with "
        "its whitespace tokenizer and a boolean OR of term queries). tantivy quantises field "
        "lengths to one byte, so its scores differ slightly; bm25s (method lucene) is the "
        "reference the index is tested against. Each engine answers one query at a time on one "
        "thread; bm25s's numba backend is compiled by a first call before timing."
    )


def _numba_retriever(bm25s: Any, corpus: list[list[str]], k1: float, b: float) -> Any:
    """bm25s with its numba backend (its fast path), or None without numba."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return None
    retriever = bm25s.BM25(k1=k1, b=b, method="lucene", backend="numba")
    retriever.index(corpus, show_progress=False)
    return retriever


def _block_tokens(snap: Snapshot) -> list[list[str]]:
    out = []
    for ordinal in range(snap.n_blocks):
        block = snap.block(ordinal)
        title = snap.documents[block.doc].sections[block.section].title
        out.append(document_tokens(f"{title}\n{block.text}"))
    return out


def _top10(found: tuple[npt.NDArray[np.uint32], npt.NDArray[np.float64]]) -> list[int]:
    from index.bm25 import top_k

    return [o for o, _ in top_k(found[0], found[1], 10)]


def _agreement(snap: Snapshot, retriever: Any, queries: list[list[str]]) -> str:
    """Share of queries whose top-10 scores equal bm25s's (relative 1e-5; bm25s is float32).

    Scores, not block ids: replicated text makes many exact ties, which each engine breaks
    its own way (Citewise by ordinal).
    """
    same = 0
    for q in queries:
        ours = [s for _, s in snap.bm25_search(" ".join(q), 10)]
        _, scores = retriever.retrieve([q], k=10, show_progress=False)
        theirs = [float(x) for x in scores[0] if x > 0][: len(ours)]
        same += len(theirs) == len(ours) and bool(np.allclose(ours, theirs, rtol=1e-5))
    return f"{same / len(queries):.3f} (scores)"


def _tantivy(corpus: list[list[str]], queries: list[list[str]]) -> list[Any] | None:
    try:
        import tantivy
    except ImportError:
        return None
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("body", stored=False, tokenizer_name="whitespace")
    schema = builder.build()
    index = tantivy.Index(schema)
    writer = index.writer(heap_size=200_000_000, num_threads=1)
    for tokens in corpus:
        writer.add_document(tantivy.Document(body=" ".join(tokens)))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    searcher = index.searcher()

    def query(tokens: list[str]) -> Any:
        should = tantivy.Occur.Should
        return tantivy.Query.boolean_query(
            [(should, tantivy.Query.term_query(schema, "body", t)) for t in tokens]
        )

    prepared = [query(q) for q in queries]

    def run(q: Any) -> object:
        return searcher.search(q, 10)

    samples = _each(run, prepared)
    return ["tantivy", _p50(samples), _p99(samples), "(scores quantised)"]


# -- exact scan ----------------------------------------------------------------------------------


def _find_all(buffer: bytes, starts: list[int], needle: bytes) -> list[tuple[int, int]]:
    """The peer: every non-overlapping `bytes.find` hit over the whole NUL-joined buffer,
    each mapped to its block (bisect), counted per block."""
    counts: dict[int, int] = {}
    step = len(needle)
    pos = buffer.find(needle)
    while pos >= 0:
        block = bisect.bisect_right(starts, pos) - 1
        counts[block] = counts.get(block, 0) + 1
        pos = buffer.find(needle, pos + step)
    return sorted(counts.items())


def scan_throughput(report: Report, quick: bool) -> None:
    from index.scan import scan_form

    report.title = "scan_term throughput: exact scan against bytes.find over the folded buffer"
    n = 10_000 if quick else 100_000
    terms = {
        "frequent": "the",
        "frequent (zh)": "软件包",
        "rare": "setmaxlisteners",
        "absent": "zyzzyva",
    }
    rounds = 5 if quick else 15
    with tempfile.TemporaryDirectory(prefix="citewise-bench-") as tmp:
        directory = Path(tmp) / "s"
        build_synthetic(directory, n)
        with Snapshot.open(directory) as snap:
            # The peer's buffer: the same layout as folded.bin (folded texts joined by NUL),
            # built here from the block texts, held in memory as one bytes object.
            texts = [scan_form(snap.block(o).text).encode("utf-8") for o in range(snap.n_blocks)]
            buffer = b"\x00".join(texts)
            starts = list(itertools.accumulate((len(t) + 1 for t in texts[:-1]), initial=0))
            folded_bytes = len(buffer)
            ctx = ToolContext(snapshot=snap, embedder=_Precomputed(
                EmbeddingSpec(provider="none", model="none", dimensions=1), {}),
                counter=TokenCounter())  # fmt: skip
            rows: list[list[Any]] = []
            for label, term in terms.items():
                needle = scan_form(term).encode("utf-8")
                expected = snap.scan(term)
                assert expected == _find_all(buffer, starts, needle), term
                ours: list[float] = []
                peer: list[float] = []
                tool: list[float] = []

                async def call_tool(term: str = term) -> tuple[ToolOutcome, float]:
                    t0 = time.perf_counter()  # the call alone, not the event loop's start
                    outcome = await run_tool(ctx, "scan_term", {"term": term})
                    seconds = time.perf_counter() - t0
                    assert outcome.ok, outcome.json
                    return outcome, seconds

                # Interleaved, so a burst of load on the shared machine hits all three alike.
                for _ in range(rounds):
                    ours += _timed(functools.partial(snap.scan, term))
                    peer += _timed(functools.partial(_find_all, buffer, starts, needle))
                    outcome, seconds = anyio.run(call_tool)
                    tool.append(seconds)
                payload, tokens = len(outcome.json), outcome.token_estimate
                ratio = statistics.median(peer) / statistics.median(ours)
                rows.append(
                    [
                        label,
                        term,
                        len(expected),
                        sum(c for _, c in expected),
                        _p50(ours),
                        _spread(ours),
                        round(folded_bytes / statistics.median(ours) / 1e9, 2),
                        _p50(peer),
                        _spread(peer),
                        round(folded_bytes / statistics.median(peer) / 1e9, 2),
                        round(ratio, 2),
                        _p50(tool),
                        _spread(tool),
                        payload,
                        tokens,
                    ]
                )
                report.target(f"scan '{term}' speed / bytes.find", ratio, 1.0, at_most=False)
            rare_gbps = rows[2][6]
    report.figure("folded_megabytes", round(folded_bytes / 1e6, 1))
    report.table(
        f"Scan over {n} blocks (ms: median, [min-max] of {rounds} rounds)",
        [
            "term",
            "string",
            "blocks hit",
            "occurrences",
            "citewise scan ms",
            "spread",
            "citewise GB/s",
            "bytes.find ms",
            "spread",
            "bytes.find GB/s",
            "speed-up",
            "scan_term tool ms",
            "spread",
            "tool JSON bytes",
            "tool tokens",
        ],
        rows,
    )
    report.target("rare-term scan throughput (GB/s of folded text)", rare_gbps, 1.0, at_most=False)
    report.notes.append(
        "Throughput = bytes of folded text in scope / wall time. The peer is the naive exact "
        "scan at its fastest in Python: bytes.find over one in-memory buffer of every folded "
        "block joined by NUL (folded.bin's layout), each hit mapped to its block by bisect. "
        "Citewise: short terms that cannot overlap themselves are located with numpy over the "
        "memory-mapped folded text (rarest byte first) and counted per block with one "
        "searchsorted; other terms use a bytes.find loop. Both return identical hits "
        "(asserted). The scan_term tool column is run_tool('scan_term') end to end: the scan, "
        "snippets, the result payload, JSON and its DeepSeek token count."
    )


def _spread(samples: Sequence[float]) -> str:
    return f"{_ms(min(samples))}-{_ms(max(samples))}"


# -- list_blocks and token estimates ------------------------------------------------------------


def _big_document(n_blocks: int) -> DocumentRecord:
    paras = corpus_paragraphs()
    sections = 20
    per = n_blocks // sections
    blocks = tuple(
        BlockRecord(
            block_index=i,
            block_id=f"b{i:05d}",
            section=i // per,
            text=f"{paras[i % len(paras)]} m{i}",
            tokens=100,
        )
        for i in range(n_blocks)
    )
    records = tuple(
        SectionRecord(
            path=f"Chapter {s + 1}",
            title=f"Chapter {s + 1}",
            ordinal=s,
            depth=1,
            parent=-1,
            direct_blocks=per,
            subtree_blocks=per,
            direct_tokens=100 * per,
            subtree_tokens=100 * per,
            first_sentence="",
        )
        for s in range(sections)
    )
    h = hashlib.sha256(b"big").hexdigest()
    return DocumentRecord(doc_id="dbig", content_hash=h, source="big.md", source_label="big.md",
                          title="Big", sections=records, blocks=blocks)  # fmt: skip


def list_blocks_cost(report: Report, quick: bool) -> None:
    from index.records import SnapshotManifest

    report.title = "list_blocks of a 1,000-block document, and the cost of token estimates"
    counter = TokenCounter()
    with tempfile.TemporaryDirectory(prefix="citewise-bench-") as tmp:
        directory = Path(tmp) / "s"
        manifest = SnapshotManifest(snapshot_id="big", parent_id=None, collection="bench",
                                    status="ready", created_at="2026-01-01T00:00:00Z")  # fmt: skip
        doc = _big_document(1_000)
        build_snapshot(directory, manifest, [doc], [np.zeros((1_000, 0), np.float32)],
                       k1=1.2, b=0.75, exact_search_max_blocks=50_000)  # fmt: skip
        with Snapshot.open(directory) as snap:
            ctx = ToolContext(
                snapshot=snap,
                embedder=_Precomputed(
                    EmbeddingSpec(provider="none", model="none", dimensions=1), {}
                ),
                counter=counter,
            )
            args = ListBlocksArgs(doc_id="dbig")
            repeat = 3 if quick else 10
            build = _each(functools.partial(list_blocks, snap), [args], repeat)
            result = list_blocks(snap, args)
            assert isinstance(result, BlocksResult)
            encode = _each(functools.partial(finish, counter=counter), [result], repeat)

            async def whole() -> list[float]:
                out = []
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    await run_tool(ctx, "list_blocks", {"doc_id": "dbig"})
                    out.append(time.perf_counter() - t0)
                return out

            total = anyio.run(whole)
            payload, tokens = finish(result, counter)
            rows: list[list[Any]] = [
                [
                    "list_blocks 1,000 blocks",
                    len(payload),
                    tokens,
                    _p50(build),
                    _p50(encode),
                    _p50(total),
                ]
            ]
            # Token-estimate cost on smaller results: a 5-block search result, a 50-block section.
            for label, count in (
                ("5 blocks (search_blocks size)", 5),
                ("50 blocks (a section)", 50),
            ):
                part = BlocksResult(
                    blocks=result.blocks[:count],
                    total=count,
                    token_estimate=0,
                    contract_version=result.contract_version,
                )
                data, n_tokens = finish(part, counter)
                rows.append(
                    [
                        label,
                        len(data),
                        n_tokens,
                        "—",
                        _p50(_each(functools.partial(finish, counter=counter), [part], 20)),
                        "—",
                    ]
                )
    report.table(
        "Cost by result size",
        [
            "result",
            "JSON bytes",
            "tokens",
            "payload ms",
            "JSON + token count ms",
            "run_tool total ms",
        ],
        rows,
    )
    report.figure("list_blocks_1000_total_ms", rows[0][5])
    report.figure("token_count_ms_per_kilobyte", round(rows[0][4] / (rows[0][1] / 1000), 4))
    report.target("list_blocks of 1,000 blocks, whole call (ms)", rows[0][5], 1000.0)
    report.notes.append(
        "JSON + token count = engine.tools.executor.finish: encode the result, count its "
        "DeepSeek tokens once (token_estimate is the count of that exact JSON). The harness "
        "needs the count for admission, so it is paid on every result."
    )
