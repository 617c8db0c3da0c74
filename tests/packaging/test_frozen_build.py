"""The PyInstaller one-folder build (packaging/) starts and works as a user would use it.

Builds with packaging/build.sh (or reuses the build whose BUILD_ID names the current source
hash), then runs the built executable with no Python of ours around it: `--version`, an offline
import of a corpus Markdown file and a PDF with the embedded model (parsing in the frozen
binary's worker processes), `ask` through the loopback chat server, and `serve --browser`
serving its page and NiceGUI's assets on 127.0.0.1 behind the token and the Host check.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pymupdf
import pytest

from tests.corpus import DOCS, REPO
from tests.servers.chat_server import ChatServer, Text
from web.security import COOKIE_NAME

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="packaging/build.sh builds the Linux app (build.ps1: Windows)"
)

BUILD_DIR = Path(os.environ.get("CITEWISE_BUILD_DIR", REPO / ".build"))
APP = BUILD_DIR / "dist" / "citewise"
BUILD_TIMEOUT_S = 30 * 60
DEAD_PROXY = "http://127.0.0.1:9"  # the discard port: any attempt to go online fails at once


@dataclass
class Built:
    executable: Path
    build_id: str
    log: str  # build.sh's own summary: built in N s and the size, or "up to date"


@pytest.fixture(scope="module")
def built() -> Built:
    started = time.monotonic()
    done = subprocess.run(
        [str(REPO / "packaging" / "build.sh")],
        cwd=REPO,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    summary = done.stderr.strip().splitlines()[-1]
    print(f"\nfrozen build: {summary} (fixture: {time.monotonic() - started:.0f} s)")
    return Built(APP / "citewise", (APP / "BUILD_ID").read_text(encoding="utf-8").strip(), summary)


def build_id_module() -> types.ModuleType:
    """packaging/build_id.py (a script folder, not a package: `packaging` is pip's name)."""
    spec = importlib.util.spec_from_file_location("build_id", REPO / "packaging" / "build_id.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _clean_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CITEWISE_", "PYTEST_", "NICEGUI_", "PYTHON"))
        and k not in ("VIRTUAL_ENV",)
    }
    env.update(extra)
    return env


def _app_env(home: Path, **extra: str) -> dict[str, str]:
    """The frozen app on its own data directory, with no credential store and no way online."""
    return _clean_env(
        CITEWISE_HOME=str(home),
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
        HTTP_PROXY=DEAD_PROXY,
        HTTPS_PROXY=DEAD_PROXY,
        ALL_PROXY=DEAD_PROXY,
        NO_PROXY="127.0.0.1,localhost",
        **extra,
    )


def _run(built: Built, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(built.executable), *args],
        cwd=built.executable.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


# -- the build itself -------------------------------------------------------------------------
def test_build_names_its_sources_and_prints_the_app_version(built: Built) -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    done = _run(built, "--version", env=_clean_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"citewise {version}"
    assert (APP / "citewise-version.txt").read_text(encoding="utf-8").strip() == version
    ids = build_id_module()
    assert ids.source_hash_of(built.build_id) == ids.source_hash()[:16]
    assert (APP / "_internal" / "prompts" / "baseline" / "manifest.json").is_file()


# -- import, parsed in the frozen binary's own worker processes -------------------------------
@dataclass
class Imported:
    home: Path
    result: subprocess.CompletedProcess[str]
    workers: dict[int, list[str]]  # pid → command line of each child seen during the import


def _children(pid: int) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == pid:
                raw = (entry / "cmdline").read_bytes()  # empty once the process has ended
                if raw:
                    found[int(entry.name)] = raw.decode(errors="replace").split("\0")[:-1]
        except (OSError, ValueError, IndexError):
            continue  # the process ended while we looked
    return found


def _pdf_excerpt(target: Path) -> Path:
    """Three pages of a corpus PDF (the whole book would only make the test slower)."""
    with pymupdf.open(DOCS / "lshort-zh-cn.pdf") as book, pymupdf.open() as part:
        part.insert_pdf(book, from_page=10, to_page=12)
        part.save(target)
    return target


@pytest.fixture(scope="module")
def imported(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Imported:
    root = tmp_path_factory.mktemp("frozen")
    docs = root / "docs"
    docs.mkdir()
    (docs / "events.md").write_bytes((DOCS / "nodejs-md" / "events.md").read_bytes())
    _pdf_excerpt(docs / "lshort-excerpt.pdf")
    home = root / "home"
    env = _app_env(home, CITEWISE_EMBEDDING_PROVIDER="local")
    proc = subprocess.Popen(
        [str(built.executable), "import", str(docs), "--json"],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    workers: dict[int, list[str]] = {}
    try:
        deadline = time.monotonic() + 300
        while proc.poll() is None and time.monotonic() < deadline:
            workers.update(_children(proc.pid))
            time.sleep(0.02)
        stdout, stderr = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return Imported(
        home, subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), workers
    )


def test_import_parses_in_frozen_workers_and_embeds_offline(imported: Imported) -> None:
    result = imported.result
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["status"] == "ready" and doc["failed_documents"] == []
    stats = doc["stats"]
    assert stats["documents_succeeded"] == 2 and stats["pages"] == 3
    assert stats["blocks_embedded"] == stats["blocks_indexed"] > 50
    parse_workers = [pid for pid, cmd in imported.workers.items() if cmd[1:] == WORKER_ARGS]
    assert parse_workers, f"no parse worker seen among {imported.workers}"
    for pid in parse_workers:  # the import shut its workers down when it finished
        assert not Path(f"/proc/{pid}").exists() or _zombie(pid)


WORKER_ARGS = ["-u", "-m", "anyio.to_process"]


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_status_names_the_embedded_model(built: Built, imported: Imported) -> None:
    done = _run(built, "status", "--json", env=_app_env(imported.home))
    assert done.returncode == 0, done.stderr
    snapshot = json.loads(done.stdout)["active_snapshot"]
    assert snapshot["documents"] == 2
    assert snapshot["embedding"].startswith("local:use-multilingual-v3@")


# -- ask through the loopback chat server ------------------------------------------------------
def _search() -> Text:
    return Text('Thought: search.\nAction: search_blocks[{"query": "EventEmitter listener"}]')


def _cite(body: dict[str, Any]) -> Text:
    observation = json.loads(body["messages"][-1]["content"].splitlines()[-2])
    citation = observation["payload"]["blocks"][0]["citation"]
    return Text(f"Thought: enough.\nAction: Finish[Listeners run in order.【来源:{citation}】]")


def test_ask_answers_through_the_chat_server_and_records_the_build(
    built: Built, imported: Imported, chat_server: ChatServer
) -> None:
    chat_server.script(_search(), _cite)
    env = _app_env(
        imported.home, CITEWISE_CHAT_BASE_URL=chat_server.url, CITEWISE_DEEPSEEK_API_KEY="test"
    )
    done = _run(built, "ask", "--json", "How do EventEmitter listeners run?", env=env)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["termination_reason"] == "finished"
    assert answer["answer"].startswith("Listeners run in order.")
    [citation] = answer["citations"]
    assert citation["valid"] and citation["doc_id"]
    assert len(chat_server.requests) == 2

    traces = json.loads(_run(built, "trace", "list", "--json", env=env).stdout)["traces"]
    shown = _run(built, "trace", "show", traces[0]["trace_id"], "--json", env=env)
    manifest = json.loads(shown.stdout)["manifest"]
    assert manifest["app_build"] == f"frozen:{built.build_id}"
    assert manifest["app_version"] != "0.0.0+unknown"


# -- serve --browser ---------------------------------------------------------------------------
@dataclass
class Served:
    base: str
    url: str  # with the token
    process: subprocess.Popen[str]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def served(built: Built, imported: Imported) -> Iterator[Served]:
    port = _free_port()
    process = subprocess.Popen(
        [str(built.executable), "serve", "--browser", "--port", str(port)],
        cwd=built.executable.parent,
        env=_app_env(imported.home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:\d+/\?token=\S+", line)
        assert match, f"no URL printed: {line!r}"
        yield Served(f"http://127.0.0.1:{port}", match.group(0), process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _until_up(served: Served, timeout_s: float = 60.0) -> httpx.Response:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            return httpx.get(served.url, follow_redirects=False, timeout=5)
        except httpx.TransportError:
            assert served.process.poll() is None, served.process.stderr.read()  # type: ignore[union-attr]
            time.sleep(0.1)
    raise AssertionError("the frozen server did not answer within a minute")


def test_serve_browser_serves_the_app_page_and_its_assets_on_loopback(served: Served) -> None:
    traded = _until_up(served)
    assert traded.status_code == 303
    cookies = {COOKIE_NAME: traded.cookies[COOKIE_NAME]}
    page = httpx.get(served.base + "/", cookies=cookies, timeout=10)
    assert page.status_code == 200 and page.headers.get("x-nicegui-content") == "page"
    assert "Citewise" in page.text
    assets = sorted(set(re.findall(r'"(/_nicegui/[^"]+\.(?:js|mjs|css))"', page.text)))
    assert len(assets) > 5, page.text[:2000]
    for asset in assets:  # NiceGUI's bundled files, served from the frozen folder
        r = httpx.get(served.base + asset, cookies=cookies, timeout=10)
        assert r.status_code == 200 and r.content, asset

    assert httpx.get(served.base + "/", timeout=5).status_code == 403  # no cookie
    foreign = httpx.get(served.base + "/", cookies=cookies, headers={"host": "evil.example"})
    assert foreign.status_code == 421  # the Host check is on in the frozen build too


# -- what only a frozen program does ---------------------------------------------------------
def _without_console() -> None:
    """Like a windowed Windows program: no stdout and no stderr at all."""
    os.close(1)
    os.close(2)


def test_without_a_console_the_output_goes_to_the_log_in_the_data_directory(
    built: Built, imported: Imported
) -> None:
    log = imported.home / "logs" / "citewise.log"
    done = subprocess.run(
        [str(built.executable), "status", "--json"],
        env=_app_env(imported.home),
        stdin=subprocess.DEVNULL,
        preexec_fn=_without_console,
        timeout=120,
    )
    assert done.returncode == 0
    status = json.loads(log.read_text(encoding="utf-8").strip().splitlines()[-1])
    assert status["active_snapshot"]["documents"] == 2


def test_a_newer_build_unpacked_beside_this_one_is_reported(
    built: Built, imported: Imported
) -> None:
    version = (APP / "citewise-version.txt").read_text(encoding="utf-8").strip()
    side = Path(tempfile.mkdtemp(prefix="siblings-", dir=BUILD_DIR))  # same file system
    try:
        here = side / f"Citewise-{version}"
        subprocess.run(["cp", "-al", str(APP), str(here)], check=True, timeout=120)
        newer = side / "Citewise-99.0.0"
        newer.mkdir()
        (newer / "citewise-version.txt").write_text("99.0.0\n", encoding="utf-8")
        done = subprocess.run(
            [str(here / "citewise"), "version", "--check", "--json"],
            env=_app_env(imported.home),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["running"] == version
        assert [b["version"] for b in report["newer_installed"]] == ["99.0.0"]
    finally:
        shutil.rmtree(side)
