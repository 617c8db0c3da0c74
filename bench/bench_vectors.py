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
`--scoring` scores blocks from a sentence snapshot's stored part vectors by several rules
(nothing embedded again but the questions and the probes), each with its own floor
calibrated as a build would, and prints recall of the vector list alone and of the hybrid
search, per question set (`--gold`, `--second`), half and kind, and how each retrieval
question's evidence scored against the floor (is a cross-lingual miss the model or the floor?).
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
SECOND = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "gold" / "second.jsonl"
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
                                search(snap, q, v, None, params, mode)
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


SCORINGS = ("block", "max", "max_or_block", "mix0.2", "mix0.5", "max_or_mix0.2", "soft0.05", "top2")


def rule_scores(
    sims: Any, starts: Any, block_part: bool, rule: str
) -> Any:  # [queries, parts] -> [queries, blocks]
    """Block scores from part similarities under `rule`. With `block_part` each block's first
    part is the whole block: "block" is it alone, "max" the best window, "max_or_block" the
    best of all parts (what the index does), "mixW" (1-W) x best window + W x whole block,
    "max_or_mixW" the better of that and the whole block; "softT" T log mean exp(s/T) over
    the windows; "top2" the mean of the best two windows."""
    import numpy as np

    counts = np.diff(np.append(starts, sims.shape[1]))
    whole = sims[:, starts] if block_part else None
    windows = sims.copy()
    if block_part:  # mask the whole-block part out of the window rules
        windows[:, starts[counts > 1]] = -np.inf
        single = counts == 1
        windows[:, starts[single]] = sims[:, starts[single]]
    best = np.maximum.reduceat(windows, starts, axis=1)
    if rule == "block":
        return whole if whole is not None else best
    if rule == "max":
        return best
    if rule == "max_or_block":
        return np.maximum.reduceat(sims, starts, axis=1)
    if rule.startswith("mix") or rule.startswith("max_or_mix"):
        w = float(rule.rsplit("mix", 1)[1])
        mixed = (1 - w) * best + w * (whole if whole is not None else best)
        return (
            np.maximum(mixed, whole) if rule.startswith("max_or") and whole is not None else mixed
        )
    if rule.startswith("soft"):
        t = float(rule[4:])
        e = np.where(np.isinf(windows), 0.0, np.exp((windows - 1) / t))
        n = np.add.reduceat(np.isfinite(windows).astype(np.float64), starts, axis=1)
        return 1 + t * np.log(np.add.reduceat(e, starts, axis=1) / np.maximum(n, 1))
    if rule == "top2":
        out = np.empty_like(best)
        for j, (a, c) in enumerate(zip(starts, counts, strict=True)):
            seg = np.sort(windows[:, a : a + c], axis=1)
            seg = seg[:, np.isfinite(seg).all(axis=0)] if c > 1 else seg
            out[:, j] = seg[:, -2:].mean(axis=1)
        return out
    raise ValueError(f"unknown scoring rule {rule!r}")


class _ScoredSnapshot:
    """A snapshot whose vector list is scored by another rule (this study only): search()
    reads everything else, the keyword side and the fusion included, from the real one."""

    def __init__(self, snap: Any, row: Any, floor: Any) -> None:
        import msgspec

        self._snap = snap
        self._row = row
        self.manifest = msgspec.structs.replace(snap.manifest, similarity_floor=floor)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._snap, name)

    def vector_search(self, query: Any, k: int, docs: Any = None) -> list[tuple[int, float]]:
        import numpy as np

        order = np.lexsort((np.arange(len(self._row)), -self._row))[:k]
        return [(int(o), float(self._row[o])) for o in order]


def scoring_study(home: Path, gold_paths: dict[str, Path]) -> dict[str, Any]:
    """Recall of each scoring rule (vector list alone and hybrid) on `home`'s snapshot."""
    import msgspec
    import numpy as np

    from actors.catalog import Catalog
    from engine.embedding import LocalEmbedding
    from engine.embedding.probes import PROBES_VERSION, probe_texts
    from engine.evaluation.gold import contains_quote, load_gold, normalize
    from engine.paths import DataDir
    from engine.tools.retrieval import search
    from index.vectors import calibrate_floor

    embedder = LocalEmbedding()
    out: dict[str, Any] = {"rules": {}, "evidence": []}
    with Catalog(DataDir(home), "default").pin_active() as snap:
        assert snap is not None, f"{home} has no snapshot"
        layout = snap.manifest.vector_layout
        assert layout is not None and layout.granularity == "sentence", "needs sentence vectors"
        params = snap.manifest.retrieval
        assert params is not None
        n = snap.n_blocks
        texts = [snap.block(o).text for o in range(n)]
        doc_lang = [snap.documents[snap.block(o).doc].lang for o in range(n)]
        items: list[tuple[str, Any, set[int]]] = []
        for set_name, path in gold_paths.items():
            for item in load_gold(path).items:
                if item.is_retrieval:
                    quotes = [normalize(e.quote) for e in item.evidence]
                    found = {o for o in range(n) if contains_quote(texts[o], quotes)}
                    items.append((set_name, item, found))
        matrix = np.concatenate([snap.doc_vectors(d) for d in range(len(snap.documents))])
        counts = np.concatenate(
            [c for d in range(len(snap.documents)) if (c := snap.doc_part_counts(d)) is not None]
        )
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        questions = anyio.run(embedder.embed, [i.question for _, i, _ in items]).vectors
        probes = anyio.run(embedder.embed, probe_texts()).vectors
        q_sims, p_sims = questions @ matrix.T, probes @ matrix.T
        top10 = msgspec.structs.replace(params, top_k=10)
        for rule in SCORINGS:
            scores = rule_scores(q_sims, starts, layout.with_block, rule)
            best = rule_scores(p_sims, starts, layout.with_block, rule).max(axis=1)
            floor = calibrate_floor(best, params.min_similarity, PROBES_VERSION)
            table: dict[str, Any] = {"floor": floor.threshold}
            for mode in ("vector", "hybrid"):
                ranks: list[int | None] = []
                for qi, (_, item, found) in enumerate(items):
                    view = _ScoredSnapshot(snap, scores[qi], floor)
                    got = search(view, item.question, questions[qi], None, top10, mode)  # type: ignore[arg-type]
                    ranks.append(
                        next((k for k, o in enumerate(got.ordinals, 1) if o in found), None)
                    )
                table[mode] = _study_rates(items, ranks)
            out["rules"][rule] = table
            print(json.dumps({"scoring": rule, **table}), flush=True)
            if rule == "max_or_block" or (rule == SCORINGS[-1] and not out["evidence"]):
                for qi, (set_name, item, found) in enumerate(items):
                    if found:
                        row = scores[qi]
                        top = max(found, key=lambda o: row[o])
                        out["evidence"].append({"set": set_name, "id": item.id, "kind": item.kind,
                            "question_lang": item.lang, "document_lang": doc_lang[top],
                            "evidence_similarity": round(float(row[top]), 3),
                            "best_similarity": round(float(row.max()), 3), "floor": floor.threshold,
                            "rank_without_floor": int((row > row[top]).sum()) + 1})  # fmt: skip
    return out


def _study_rates(items: Sequence[tuple[str, Any, set[int]]], ranks: Sequence[int | None]) -> Any:
    """recall@5, recall@10 and MRR (within the top 10) per set, set half and kind."""
    groups: dict[str, list[int | None]] = {}
    for (set_name, item, _), rank in zip(items, ranks, strict=True):
        language = "cross_language" if item.kind == "cross_lingual" else "same_language"
        for key in (set_name, f"{set_name}.{_parity(item.id)}", item.kind, language):
            groups.setdefault(key, []).append(rank)
    return {
        key: {
            "recall@5": round(sum(r is not None and r <= 5 for r in rs) / len(rs), 3),
            "recall@10": round(sum(r is not None for r in rs) / len(rs), 3),
            "mrr@10": round(sum(1.0 / r for r in rs if r is not None) / len(rs), 3),
            "n": len(rs),
        }
        for key, rs in groups.items()
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_vectors")
    parser.add_argument("homes", nargs="*", type=Path)
    parser.add_argument("--latency", type=int, nargs="*", default=None, help="sizes in blocks")
    parser.add_argument("--parts", type=int, nargs="*", default=[0, 5])
    parser.add_argument("--threshold", type=int, default=30_000)
    parser.add_argument("--import", dest="do_import", action="store_true")
    parser.add_argument("--embed-rate", type=int, default=0)
    parser.add_argument("--gold", type=Path, default=CORPUS / "gold.jsonl")
    parser.add_argument("--second", type=Path, default=SECOND)
    parser.add_argument("--scoring", action="store_true")
    args = parser.parse_args(argv)
    if args.scoring:
        for home in args.homes:
            found = scoring_study(home, {"shared": args.gold, "second": args.second})
            print(json.dumps({"home": str(home), "evidence": found["evidence"]}), flush=True)
        return
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
    main()
