"""Cold start of the command line and the app, each against its named peer in the same run.

Every figure is the wall time of a fresh process, from spawn to exit (to the first answered page
for `serve`), as a person runs it: `--version`, `--help` and `status` against `python -c "import
numpy"`; a one-off `tool search_blocks` (tokenizer, local embedding model, first query) and
`tool scan_term` end to end against `python -c "import pymupdf, numpy"`. Runs are interleaved
(command, peer, command, …) so a busy machine slows both alike; medians, spreads and ratios.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from bench.runner import CORPUS, REPO, Report

PEER_NUMPY = "import numpy"
PEER_PYMUPDF = "import pymupdf, numpy"
SEARCH = json.dumps({"query": "how are listeners of an event called"})
SCAN = json.dumps({"term": "listener"})
# (figure, argv after `python -m cli`, peer, the ratio the issue asks for)
COMMANDS: tuple[tuple[str, tuple[str, ...], str, float], ...] = (
    ("version", ("--version",), PEER_NUMPY, 2.5),
    ("help", ("--help",), PEER_NUMPY, 2.5),
    ("status", ("status",), PEER_NUMPY, 2.5),
    ("tool_search_blocks", ("tool", "search_blocks", SEARCH), PEER_PYMUPDF, 3.0),
    ("tool_scan_term", ("tool", "scan_term", SCAN), PEER_PYMUPDF, 3.0),
)
SERVE_TARGET_S = 5.0
_URL = re.compile(r"Open Citewise at: (\S+)")


def cold_start(report: Report, quick: bool) -> None:
    report.title = "Cold start: the command line and the app, against their peers"
    runs = 5 if quick else 9
    with tempfile.TemporaryDirectory(prefix="citewise-startup-") as tmp:
        home = Path(tmp) / "home"
        docs = _corpus(Path(tmp) / "docs", quick)
        env = _env(home)
        started = time.perf_counter()
        _cli(["import", str(docs)], env, check=True)
        report.figure("library_import_s", round(time.perf_counter() - started, 2))
        status = json.loads(_cli(["status", "--json"], env, check=True).stdout)
        blocks = status["active_snapshot"]["blocks"]
        report.figure("library", f"{len(list(docs.iterdir()))} Markdown files, {blocks} blocks")
        for name, argv, _, _ in COMMANDS:  # the answers are real before anything is timed
            done = _cli(list(argv), env, check=True)
            if name.startswith("tool_"):
                assert '"error"' not in done.stdout[:200], done.stdout[:500]
        peers = {
            PEER_NUMPY: "python -c 'import numpy'",
            PEER_PYMUPDF: "python -c 'import pymupdf, numpy'",
        }
        times: dict[str, list[float]] = {name: [] for name, *_ in COMMANDS}
        peer_times: dict[str, list[float]] = {peer: [] for peer in peers}
        for _ in range(runs):
            for name, argv, peer, _ in COMMANDS:
                times[name].append(_timed([sys.executable, "-m", "cli", *argv], env))
                peer_times[peer].append(_timed([sys.executable, "-c", peer], env))
        rows = []
        for peer, label in peers.items():
            rows.append([label, *_spread(peer_times[peer]), "", ""])
            report.figure(f"peer {label} median_s", _median(peer_times[peer]))
        for name, argv, peer, limit in COMMANDS:
            ratio = _median(times[name]) / _median(peer_times[peer])
            rows.append(
                [f"citewise {_shown(argv)}", *_spread(times[name]), peers[peer], f"{ratio:.2f}×"]
            )
            report.figure(f"{name}_median_s", _median(times[name]))
            report.figure(f"{name}_ratio", round(ratio, 2))
            report.target(f"{name} / {peers[peer]}", ratio, limit)
        header = ["process", "median s", "min s", "max s", "runs", "peer", "ratio"]
        report.table(f"Cold start ({runs} runs each, interleaved)", header, rows)

        serve = [
            _serve_seconds([sys.executable, "-m", "cli"], env) for _ in range(3 if quick else 5)
        ]
        report.figure("serve_to_answered_page_median_s", _median(serve))
        report.figure("serve_to_answered_page_spread_s", f"{min(serve):.2f}–{max(serve):.2f}")
        report.target(
            "serve: process start to an answered page (s)", _median(serve), SERVE_TARGET_S
        )
        report.table(
            "citewise serve --browser: spawn to the library page answered (HTTP 200)",
            ["median s", "min s", "max s", "runs"],
            [_spread(serve)],
        )
        frozen = _frozen_build()
        if frozen is not None:  # the one-folder build packaging/build.sh made, when present
            _cli([str(frozen), "--version"], env, frozen=True)  # its files into the page cache
            built = [_serve_seconds([str(frozen)], env) for _ in range(3 if quick else 5)]
            report.figure("frozen_serve_to_answered_page_median_s", _median(built))
            report.figure("frozen_serve_spread_s", f"{min(built):.2f}–{max(built):.2f}")
            report.figure("frozen_build_folder_mb", round(_folder_bytes(frozen.parent) / 1e6))
            report.figure("frozen_build_id", (frozen.parent / "BUILD_ID").read_text().strip())
            report.target(
                "frozen serve: process start to an answered page (s)",
                _median(built),
                SERVE_TARGET_S,
            )
    report.notes += [
        f"Wall time of fresh processes ({sys.executable} -m cli …, the editable install), "
        "spawn to exit; the data directory is a temporary one with the library imported once "
        "before timing (local embedding model, no network).",
        "search_blocks loads the local embedding model (its tokenizer restored from HOME/cache "
        "on sorted prefixes, its embedding table mapped from the uncompressed weights copy) and "
        "embeds the query on one BLAS thread; scan_term opens the snapshot and scans. Both "
        "count their result's DeepSeek tokens with the merges kept in HOME/cache (the import "
        "writes them) rather than loading the tokenizer, run on asyncio, and print the tool's "
        "exact result JSON (the same bytes as the slow paths: tests/cli/test_tool_fast_start.py).",
        "serve is timed from spawn to the first HTTP 200 of the library page through the token "
        "URL (which sets the session cookie): the source checkout's app (`python -m cli serve "
        "--browser`), and the one-folder build of packaging/build.sh when one is present "
        "(frozen_*; its BUILD_ID says which sources it was built from). The bench never builds.",
        "PYTHONDONTWRITEBYTECODE is removed from the timed processes' environment, so the "
        "project's modules are read from bytecode as in an installed app (the untimed first "
        "runs write it).",
        "Rerun: `citewise bench cold_start` (or `--quick`).",
    ]


def _corpus(folder: Path, quick: bool) -> Path:
    folder.mkdir(parents=True)
    source = CORPUS / "docs" / "nodejs-md"
    for path in sorted(source.glob("*.md"))[: 1 if quick else None]:
        shutil.copy2(path, folder / path.name)
    if quick:  # events.md alone: the file the search and scan above are about
        shutil.copy2(source / "events.md", folder / "events.md")
    return folder


def _env(home: Path) -> dict[str, str]:
    # Bytecode is written (and then read) as an installed or frozen app has it: a shell with
    # PYTHONDONTWRITEBYTECODE set would otherwise compile the project's modules every start.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("CITEWISE_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    env.update(CITEWISE_HOME=str(home), PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
    return env


def _cli(
    argv: list[str], env: dict[str, str], *, check: bool = False, frozen: bool = False
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv if frozen else [sys.executable, "-m", "cli", *argv],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=check,
    )


def _frozen_build() -> Path | None:
    folder = Path(os.environ.get("CITEWISE_BUILD_DIR", REPO / ".build")) / "dist" / "citewise"
    executable = folder / "citewise"
    return executable if executable.is_file() and (folder / "BUILD_ID").is_file() else None


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def _timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True
    )
    return time.perf_counter() - started


def _serve_seconds(command: list[str], env: dict[str, str]) -> float:
    """Spawn `serve --browser` and wait for the library page to answer 200 through the token URL."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [*command, "serve", "--browser", "--port", str(_free_port())],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = _URL.search(line)
        if found is None:
            raise RuntimeError(f"serve printed no address: {line!r}")
        deadline = started + 120
        with httpx.Client(follow_redirects=True, timeout=5) as client:
            while time.perf_counter() < deadline:
                try:
                    page = client.get(found.group(1))
                    if page.status_code == 200 and "<html" in page.text.lower():
                        return time.perf_counter() - started
                except httpx.TransportError:
                    pass
                time.sleep(0.02)
        raise RuntimeError("serve did not answer within 120 s")
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _median(values: Sequence[float]) -> float:
    return round(statistics.median(values), 3)


def _spread(values: Sequence[float]) -> list[object]:
    return [
        f"{statistics.median(values):.3f}",
        f"{min(values):.3f}",
        f"{max(values):.3f}",
        len(values),
    ]


def _shown(argv: Sequence[str]) -> str:
    return " ".join(a if not a.startswith("{") else "'…'" for a in argv)
