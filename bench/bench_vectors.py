"""Sentence-window vectors against one vector per block, on the shared corpus and its gold set.

`python -m bench.bench_vectors [--import] DATA_DIR...` prints, per data directory (each holds
the corpus imported once, e.g. with embedding.granularity "block" and "sentence"):
recall@5, recall@10 and MRR of the keyword list alone, the vector list alone and the hybrid
search, overall, by kind and on the two halves of the questions split by id parity (odd/even
number), so a parameter chosen on one half is judged on the other; the snapshot's similarity
floor; and how many nonsense queries come back empty (no_match). `--import` first imports the
corpus into each directory that has no snapshot (granularity from the directory's name:
`*block*` or `*sentence*`), each with its own empty embedding cache, and prints blocks/s.
`--embed-rate N` embeds the first N blocks of the first snapshot both ways in one process and
prints blocks/s for each (the import's embedding cost, nothing cached).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
NONSENSE = [
    "qwzx blorft vindle sporq",
    "zzzz kkkk jjjj",
    "asdfghjkl qwertyuiop",
    "??? !!! ...",
    "。。。，，，",
    "—— ** ##",
    "florbix quandrel mishtovar",
    "xkcdq vbnmz plokij",
    "ølkjæ þorn ðæm",
    "🙂🙃🙂",
    "1234 5678 9012",
    "ヌヘ ヲヰ",
]


def _parity(question_id: str) -> str:
    found = re.search(r"(\d+)$", question_id)
    return "odd" if found and int(found.group(1)) % 2 else "even"


def _rates(ranks: Sequence[int | None]) -> dict[str, float]:
    n = len(ranks) or 1
    return {
        "recall@5": round(sum(1 for r in ranks if r is not None and r <= 5) / n, 3),
        "recall@10": round(sum(1 for r in ranks if r is not None) / n, 3),
        "mrr": round(sum(1.0 / r for r in ranks if r is not None and r <= 5) / n, 3),
    }


def evaluate(home: Path, gold_path: Path) -> dict[str, Any]:
    """Recall by mode, kind and half, the floor, and nonsense no_match on `home`'s snapshot."""
    import msgspec

    from actors.catalog import Catalog
    from engine.embedding import LocalEmbedding
    from engine.evaluation.gold import contains_quote, load_gold, normalize
    from engine.paths import DataDir
    from engine.tools.retrieval import search

    gold = load_gold(gold_path)
    items = [i for i in gold.items if i.is_retrieval]
    embedder = LocalEmbedding()
    with Catalog(DataDir(home), "default").pin_active() as snap:
        assert snap is not None, f"{home} has no snapshot"
        params = snap.manifest.retrieval
        assert params is not None
        vectors = anyio.run(embedder.embed, [i.question for i in items]).vectors
        nonsense = anyio.run(embedder.embed, NONSENSE).vectors
        out: dict[str, Any] = {
            "layout": msgspec.to_builtins(snap.manifest.vector_layout),
            "similarity_floor": msgspec.to_builtins(snap.manifest.similarity_floor),
            "blocks": snap.n_blocks,
            "vectors": snap.header.n_vectors or snap.n_blocks,
            "modes": {},
        }
        top10 = msgspec.structs.replace(params, top_k=10)
        for mode in ("keyword", "vector", "hybrid"):
            ranks: list[int | None] = []
            for item, vector in zip(items, vectors, strict=True):
                quotes = [normalize(e.quote) for e in item.evidence]
                ordinals = search(snap, item.question, vector, None, top10, mode).ordinals
                five = search(snap, item.question, vector, None, params, mode).ordinals
                rank5 = next(
                    (
                        k
                        for k, o in enumerate(five, 1)
                        if contains_quote(snap.block(o).text, quotes)
                    ),
                    None,
                )
                in10 = any(contains_quote(snap.block(o).text, quotes) for o in ordinals)
                ranks.append(rank5 if rank5 is not None else (10 if in10 else None))
            table: dict[str, Any] = {"all": _rates(ranks)}
            for half in ("odd", "even"):
                table[half] = _rates(
                    [r for i, r in zip(items, ranks, strict=True) if _parity(i.id) == half]
                )
            for kind in dict.fromkeys(i.kind for i in items):
                table[kind] = _rates(
                    [r for i, r in zip(items, ranks, strict=True) if i.kind == kind]
                )
            out["modes"][mode] = table
        empty = 0
        best: list[float] = []
        for text, vector in zip(NONSENSE, nonsense, strict=True):
            outcome = search(snap, text, vector, None, params, "hybrid")
            empty += not outcome.ordinals
            best.append(max((s for _, s in outcome.trace.vector_read), default=0.0))
        out["nonsense_no_match"] = f"{empty}/{len(NONSENSE)}"
        out["nonsense_best_similarity"] = round(max(best), 3)
        questions_best = [
            search(snap, i.question, v, None, params, "vector").trace.vector_read[:1]
            for i, v in zip(items, vectors, strict=True)
        ]
        tops = [r[0][1] for r in questions_best if r]
        out["questions_top_similarity_min"] = round(min(tops), 3) if tops else None
        out["questions_under_floor"] = sum(
            1
            for r in questions_best
            if not r or r[0][1] < (out["similarity_floor"] or {}).get("threshold", 0)
        )
    return out


def import_corpus(home: Path, granularity: str) -> dict[str, Any]:
    """Import the corpus docs into `home` with an empty cache; blocks/s of the whole import."""
    from actors.app import App
    from engine.config import parse_config
    from engine.paths import DataDir

    app = App(DataDir(home), parse_config({"embedding": {"granularity": granularity}}, {}))

    async def go() -> Any:
        try:
            return await app.import_paths([CORPUS / "docs"])
        finally:
            await app.aclose()

    t0 = time.perf_counter()
    result = anyio.run(go, backend="trio")
    seconds = time.perf_counter() - t0
    blocks = result.stats.blocks_indexed
    return {"granularity": granularity, "status": result.status, "blocks": blocks,
            "seconds": round(seconds, 1), "blocks_per_s": round(blocks / seconds, 1)}  # fmt: skip


def embed_rate(home: Path, n_blocks: int) -> dict[str, Any]:
    """blocks/s of the built-in model for the first `n_blocks` blocks as one text each and as
    sentence windows, in one process, no cache (the model warmed up first)."""
    from actors.catalog import Catalog
    from actors.ingest import embedding_text
    from engine.embedding import LocalEmbedding
    from engine.embedding.windows import layout_for, part_texts
    from engine.paths import DataDir

    embedder = LocalEmbedding()
    layout = layout_for("local", "sentence")
    with Catalog(DataDir(home), "default").pin_active() as snap:
        assert snap is not None
        records = [snap.document_record(d) for d in range(len(snap.documents))]
    block_texts: list[str] = []
    window_texts: list[str] = []
    for record in records:
        for i in range(len(record.blocks)):
            if len(block_texts) >= n_blocks:
                break
            block_texts.append(embedding_text(record, i))
            one = msgspec_replace_blocks(record, i)
            window_texts.extend(part_texts(one, layout)[0])
    anyio.run(embedder.embed, ["warm up"])
    out: dict[str, Any] = {"blocks": len(block_texts), "windows": len(window_texts)}
    for name, texts in (("block", block_texts), ("sentence", window_texts)):
        t0 = time.perf_counter()
        anyio.run(embedder.embed, texts)
        seconds = time.perf_counter() - t0
        out[f"{name}_blocks_per_s"] = round(len(block_texts) / seconds, 1)
    out["ratio"] = round(out["block_blocks_per_s"] / out["sentence_blocks_per_s"], 2)
    return out


def msgspec_replace_blocks(record: Any, index: int) -> Any:
    import msgspec

    return msgspec.structs.replace(record, blocks=(record.blocks[index],))


def latency(sizes: Sequence[int], parts: Sequence[int], threshold: int) -> list[dict[str, Any]]:
    """search p50/p99 (ms; hybrid ranking and the vector list alone, query vectors made up
    front) on synthetic snapshots of each size with one vector per block (parts 0) and with
    `parts` vectors per block; build seconds too. Random vectors: latency, not quality."""
    import statistics
    import tempfile

    import numpy as np

    from bench.bench_retrieval import _queries
    from bench.synthetic import build_synthetic
    from engine.tools.retrieval import search
    from index.snapshot import Snapshot

    queries = _queries()
    rng = np.random.default_rng(11)
    qv = rng.standard_normal((len(queries), 512)).astype(np.float32)
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="citewise-bench-") as tmp:
        for n in sizes:
            for p in parts:
                directory = Path(tmp) / f"s{n}p{p}"
                t0 = time.perf_counter()
                m = build_synthetic(
                    directory, n, exact_search_max_blocks=threshold, parts_per_block=p
                )
                built = time.perf_counter() - t0
                with Snapshot.open(directory) as snap:
                    params = snap.manifest.retrieval
                    assert params is not None
                    search(snap, queries[0], qv[0], None, params)  # builds the heading index
                    samples: dict[str, list[float]] = {"hybrid": [], "vector": []}
                    for _ in range(3):
                        for q, v in zip(queries, qv, strict=True):
                            for mode in ("hybrid", "vector"):
                                t1 = time.perf_counter()
                                search(snap, q, v, None, params, mode)  # type: ignore[arg-type]
                                samples[mode].append((time.perf_counter() - t1) * 1000)
                row: dict[str, Any] = {"blocks": n, "vectors_per_block": p or 1,
                                       "vectors": n * (p or 1), "index": m.vector_index,
                                       "build_s": round(built, 1)}  # fmt: skip
                for mode, values in samples.items():
                    row[f"{mode}_p50_ms"] = round(statistics.median(values), 2)
                    row[f"{mode}_p99_ms"] = round(float(np.percentile(values, 99)), 2)
                print(json.dumps({"latency": row}), flush=True)
                rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_vectors")
    parser.add_argument("homes", nargs="*", type=Path)
    parser.add_argument("--latency", type=int, nargs="*", default=None, help="sizes in blocks")
    parser.add_argument("--parts", type=int, nargs="*", default=[0, 5])
    parser.add_argument("--threshold", type=int, default=30_000)
    parser.add_argument("--import", dest="do_import", action="store_true")
    parser.add_argument("--embed-rate", type=int, default=0)
    parser.add_argument("--gold", type=Path, default=CORPUS / "gold.jsonl")
    args = parser.parse_args(argv)
    if args.latency:
        latency(args.latency, args.parts, args.threshold)
    for home in args.homes:
        if args.do_import and not (home / "collections" / "default" / "active").exists():
            granularity = "sentence" if "sentence" in home.name else "block"
            print(json.dumps({"import": str(home), **import_corpus(home, granularity)}), flush=True)
    if args.embed_rate:
        print(json.dumps({"embed_rate": embed_rate(args.homes[0], args.embed_rate)}), flush=True)
    for home in args.homes:
        print(json.dumps({"home": str(home), **evaluate(home, args.gold)}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
