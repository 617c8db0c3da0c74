"""The smoke test of a built one-folder Citewise, run as a user would use it: the executable
with no Python of ours around it, on a data directory of its own, offline.

    python packaging/smoke.py [APP_DIR]      (default: .build/dist/citewise)

One list of checks for every platform: tests/packaging/test_frozen_build.py runs them on Linux
after packaging/build.sh, and .github/workflows/windows.yml runs this script after
packaging/build.ps1 (Windows) and build.sh (Linux), so the three cannot drift apart. It needs
the development environment (pymupdf, httpx, the loopback chat server in tests/servers/); it
never writes into the app folder, and nothing of it goes online.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(REPO) not in sys.path:  # run as a script: tests/servers/ and build_id.py are beside us
    sys.path.insert(0, str(REPO))
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import build_id  # noqa: E402  (packaging/build_id.py; `packaging` itself is pip's name)
import httpx  # noqa: E402
import pymupdf  # noqa: E402

from tests.servers.chat_server import ChatServer, Text  # noqa: E402

_mupdf: Any = pymupdf  # untyped

WINDOWS = sys.platform == "win32"
DEAD_PROXY = "http://127.0.0.1:9"  # the discard port: any attempt to go online fails at once
WORKER_ARGS = ["-u", "-m", "anyio.to_process"]  # how a frozen app starts its parse workers
COOKIE_NAME = "citewise_session"  # web/security.py (not imported: it is the app's code)
SMOKE_KEY = "sk-citewise-smoke-0123456789abcdef"  # stored and removed again by check_keys
RUN_TIMEOUT_S = 300
# Windows' MAX_PATH is 260 characters: Explorer's "Extract All" cannot write a longer path.
# Inside the unzipped Citewise-<version> folder, paths stay under this, which leaves 100 for
# where a person unzips it (C:\Users\<name>\Downloads\Citewise-0.1.0-windows-x64\ is ~60).
MAX_INSIDE_PATH = 160


class SmokeFailure(AssertionError):
    """A check found the built app not working as a user would need it to."""


def expect(condition: object, message: str) -> None:
    if not condition:
        raise SmokeFailure(message)


# -- the documents: made here, so no corpus is needed on a build machine ----------------------
TOPICS = [
    (
        "Emitters",
        "An EventEmitter calls every listener synchronously, in the order in which "
        "the listeners were registered; a listener may switch to asynchronous work itself.",
    ),
    ("Errors", "When an error event has no listener, the process throws the error and exits."),
    ("Once", "A listener added with once runs at most one time and is then removed."),
    (
        "Streams",
        "A writable stream buffers data until the highWaterMark is reached; then write "
        "returns false and the producer waits for the drain event.",
    ),
    ("Timers", "setImmediate runs a callback after the current poll phase of the event loop."),
]
ZH_LINES = [
    "LaTeX 是一种排版系统,适合编写包含数学公式的文档。",
    "使用 \\section 命令可以开始新的一节,章节编号会自动生成。",
    "交叉引用通过 \\label 和 \\ref 完成,需要编译两次才能得到正确的编号。",
]
SCANNED_WORD = "Quokkaline"  # appears only on the scanned page: found only if OCR ran


def write_markdown(path: Path) -> Path:
    """A Markdown guide with enough sections to make dozens of blocks."""
    parts = ["# Node events\n"]
    for n in range(12):
        for title, body in TOPICS:
            parts.append(f"## {title} {n + 1}\n\n{body} (Note {n + 1}.)\n")
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def write_pdf(path: Path) -> Path:
    """Three pages: two with a text layer (Chinese), one scanned (an image, no text layer)."""
    with _mupdf.open() as pdf:
        for page_no in range(2):
            page = pdf.new_page()
            y = 72.0
            for line in ZH_LINES * 6:
                page.insert_text((56, y), f"{page_no + 1}. {line}", fontname="china-s", fontsize=11)
                y += 18
        with _mupdf.open() as source:
            text_page = source.new_page()
            text_page.insert_text((56, 96), f"{SCANNED_WORD} scanning notes", fontsize=28)
            text_page.insert_text((56, 150), "Recognised offline by the OCR engine.", fontsize=20)
            picture = text_page.get_pixmap(dpi=150, colorspace=pymupdf.csGRAY)
        scan = pdf.new_page()
        scan.insert_image(scan.rect, stream=picture.tobytes("png"))
        pdf.save(path)
    return path


# -- the built app ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Built:
    """The one-folder app: the console executable, and on Windows the windowed one."""

    folder: Path

    @property
    def cli(self) -> Path:
        return self.folder / ("citewise-cli.exe" if WINDOWS else "citewise")

    @property
    def windowed(self) -> Path | None:
        return self.folder / "Citewise.exe" if WINDOWS else None

    @property
    def internal(self) -> Path:
        return self.folder / "_internal"

    @property
    def build_id(self) -> str:
        return (self.folder / "BUILD_ID").read_text(encoding="utf-8").strip()

    @property
    def version(self) -> str:
        return (self.folder / "citewise-version.txt").read_text(encoding="utf-8").strip()


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without anything of ours or of a Python around us."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.upper().startswith(("CITEWISE_", "PYTEST_", "NICEGUI_", "PYTHON"))
        and k.upper() != "VIRTUAL_ENV"
    }
    env.update(extra)
    return env


def app_env(home: Path, *, keyring: bool = False, **extra: str) -> dict[str, str]:
    """The frozen app on its own data directory with no way online; without `keyring`, with no
    credential store either (the machine's own is used only by check_keys)."""
    env = clean_env(
        CITEWISE_HOME=str(home),
        HTTP_PROXY=DEAD_PROXY,
        HTTPS_PROXY=DEAD_PROXY,
        ALL_PROXY=DEAD_PROXY,
        NO_PROXY="127.0.0.1,localhost",
        **extra,
    )
    if not keyring:
        env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
    return env


# -- child processes, on Linux (/proc) and Windows (a Toolhelp snapshot) ----------------------
def worker_children(pid: int, executable: Path) -> set[int]:
    """Parse workers the process `pid` has running now: on Linux the children whose command
    line is anyio's worker; on Windows (no command lines without WMI) the children that are
    the same executable, which an import starts for nothing else."""
    if WINDOWS:
        return {
            child
            for child, name in _windows_children(pid).items()
            if name.lower() == executable.name.lower()
        }
    return {child for child, cmd in _linux_children(pid).items() if cmd[1:] == WORKER_ARGS}


def alive(pid: int) -> bool:
    if WINDOWS:
        return pid in _windows_processes()
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _linux_children(pid: int) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == pid:
                raw = (entry / "cmdline").read_bytes()  # empty once the process has ended
                if raw:
                    found[int(entry.name)] = raw.decode(errors="replace").split("\0")[:-1]
        except (OSError, ValueError, IndexError):
            continue  # the process ended while we looked
    return found


def _windows_processes() -> dict[int, tuple[int, str]]:
    """pid → (parent pid, executable name) of every process (CreateToolhelp32Snapshot)."""
    import ctypes
    from ctypes import wintypes

    class ProcessEntry(ctypes.Structure):  # PROCESSENTRY32W
        _fields_ = [
            ("dwSize", wintypes.DWORD),
            ("cntUsage", wintypes.DWORD),
            ("th32ProcessID", wintypes.DWORD),
            ("th32DefaultHeapID", ctypes.c_size_t),  # ULONG_PTR
            ("th32ModuleID", wintypes.DWORD),
            ("cntThreads", wintypes.DWORD),
            ("th32ParentProcessID", wintypes.DWORD),
            ("pcPriClassBase", wintypes.LONG),
            ("dwFlags", wintypes.DWORD),
            ("szExeFile", wintypes.WCHAR * 260),
        ]

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    kernel32.CreateToolhelp32Snapshot.restype = wintypes.HANDLE
    kernel32.CreateToolhelp32Snapshot.argtypes = [wintypes.DWORD, wintypes.DWORD]
    kernel32.Process32FirstW.argtypes = [wintypes.HANDLE, ctypes.POINTER(ProcessEntry)]
    kernel32.Process32NextW.argtypes = [wintypes.HANDLE, ctypes.POINTER(ProcessEntry)]
    kernel32.CloseHandle.argtypes = [wintypes.HANDLE]
    snapshot = kernel32.CreateToolhelp32Snapshot(0x2, 0)  # TH32CS_SNAPPROCESS
    if snapshot in (None, wintypes.HANDLE(-1).value):
        raise OSError(ctypes.get_last_error(), "CreateToolhelp32Snapshot failed")  # type: ignore[attr-defined]
    found: dict[int, tuple[int, str]] = {}
    try:
        entry = ProcessEntry()
        entry.dwSize = ctypes.sizeof(ProcessEntry)
        more = kernel32.Process32FirstW(snapshot, ctypes.byref(entry))
        while more:
            found[entry.th32ProcessID] = (entry.th32ParentProcessID, entry.szExeFile)
            more = kernel32.Process32NextW(snapshot, ctypes.byref(entry))
    finally:
        kernel32.CloseHandle(snapshot)
    return found


def _windows_children(pid: int) -> dict[int, str]:
    return {child: name for child, (parent, name) in _windows_processes().items() if parent == pid}


# -- the checks -------------------------------------------------------------------------------
@dataclass
class Imported:
    home: Path
    stdout: str
    stderr: str
    returncode: int
    workers: set[int]


class Smoke:
    """The checks on one built app, sharing one import (made by the first check needing it)."""

    def __init__(self, folder: Path, workdir: Path) -> None:
        self.app = Built(folder)
        self.workdir = workdir

    def run(self, *args: str, env: dict[str, str], **kw: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.app.cli), *args],
            cwd=self.app.folder,
            env=env,
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=RUN_TIMEOUT_S,
            **kw,
        )

    # the build itself
    def check_version(self) -> None:
        version = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
            "version"
        ]
        done = self.run("--version", env=clean_env())
        expect(done.returncode == 0, f"--version failed: {done.stderr[-3000:]}")
        expect(done.stdout.strip() == f"citewise {version}", f"--version said {done.stdout!r}")
        expect(self.app.version == version, f"citewise-version.txt says {self.app.version!r}")
        recorded = build_id.source_hash_of(self.app.build_id)
        expect(
            recorded == build_id.source_hash()[:16],
            f"BUILD_ID {self.app.build_id!r} was built from other sources than this checkout's",
        )

    def check_bundled_files(self) -> None:
        """What is found by path at run time, not by import, so analysis cannot see it missing."""
        internal = self.app.internal
        wanted = {
            "prompt baseline": internal / "prompts" / "baseline" / "manifest.json",
            "NiceGUI's assets": internal / "nicegui" / "static",
        }
        for what, path in wanted.items():
            expect(path.exists(), f"{what} missing from the build: {path}")
        models = sorted((internal / "rapidocr_onnxruntime" / "models").glob("*.onnx"))
        expect(len(models) >= 3, f"the OCR models (det, rec, cls .onnx) are missing: {models}")
        expect(any(internal.rglob("tokenizer.json")), "DeepSeek's tokenizer.json is missing")
        longest = max(
            (p for p in self.app.folder.rglob("*") if p.is_file()),
            key=lambda p: len(str(p.relative_to(self.app.folder))),
        )
        inside = len(f"Citewise-{self.app.version}\\{longest.relative_to(self.app.folder)}")
        expect(
            inside <= MAX_INSIDE_PATH,
            f"{longest} makes a {inside}-character path inside the release folder, more than "
            f"{MAX_INSIDE_PATH}: unzipped in a user's folder it passes Windows' 260",
        )
        if WINDOWS:
            expect(self.app.windowed and self.app.windowed.is_file(), "Citewise.exe is missing")
            for dll in ("Microsoft.Web.WebView2.Core.dll", "Python.Runtime.dll"):
                expect(any(internal.rglob(dll)), f"{dll} (the WebView2 window) is missing")

    # import, parsed in the frozen binary's own worker processes
    @cached_property
    def imported(self) -> Imported:
        root = self.workdir / "imported"
        docs = root / "docs"
        docs.mkdir(parents=True)
        write_markdown(docs / "events.md")
        write_pdf(docs / "latex-notes.pdf")
        home = root / "home"
        proc = subprocess.Popen(
            [str(self.app.cli), "import", str(docs), "--json"],
            cwd=root,
            env=app_env(home, CITEWISE_EMBEDDING_PROVIDER="local"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        workers: set[int] = set()
        try:
            deadline = time.monotonic() + RUN_TIMEOUT_S
            while proc.poll() is None and time.monotonic() < deadline:
                workers |= worker_children(proc.pid, self.app.cli)
                time.sleep(0.05)
            stdout, stderr = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        return Imported(home, stdout, stderr, proc.returncode, workers)

    def check_import(self) -> None:
        imported = self.imported
        expect(imported.returncode == 0, f"import failed: {imported.stderr[-4000:]}")
        doc = json.loads(imported.stdout)
        expect(
            doc["status"] == "ready" and doc["failed_documents"] == [],
            f"import not ready: {doc['status']} {doc['failed_documents']}",
        )
        stats = doc["stats"]
        expect(stats["documents_succeeded"] == 2 and stats["pages"] == 3, f"import stats: {stats}")
        expect(
            stats["blocks_embedded"] == stats["blocks_indexed"] > 50,
            f"blocks embedded/indexed: {stats}",
        )
        expect(imported.workers, "no parse worker process was seen during the import")
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in imported.workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [pid for pid in imported.workers if alive(pid)]
        expect(not left, f"parse workers left running after the import: {left}")

    def check_status_and_ocr(self) -> None:
        env = app_env(self.imported.home)
        done = self.run("status", "--json", env=env)
        expect(done.returncode == 0, f"status failed: {done.stderr[-3000:]}")
        snapshot = json.loads(done.stdout)["active_snapshot"]
        expect(snapshot["documents"] == 2, f"status: {snapshot}")
        expect(
            snapshot["embedding"].startswith("local:use-multilingual-v3@"),
            f"not the embedded model: {snapshot['embedding']}",
        )
        # The scanned page's word exists only in what the OCR engine (onnxruntime and its
        # models, inside the build) recognised.
        found = self.run("tool", "scan_term", json.dumps({"term": SCANNED_WORD}), env=env)
        expect(found.returncode == 0, f"scan_term failed: {found.stderr[-3000:]}")
        expect(json.loads(found.stdout)["count"] >= 1, f"OCR text not found: {found.stdout}")

    # ask through the loopback chat server
    def _ask(self, env: dict[str, str], server: ChatServer) -> dict[str, Any]:
        server.script(_search(), _cite)
        done = self.run("ask", "--json", "How do EventEmitter listeners run?", env=env)
        expect(done.returncode == 0, f"ask failed: {done.stderr[-4000:]}")
        answer: dict[str, Any] = json.loads(done.stdout)
        expect(answer["termination_reason"] == "finished", f"ask: {answer}")
        expect(answer["answer"].startswith("Listeners run in order."), f"answer: {answer}")
        expect(
            len(answer["citations"]) == 1 and answer["citations"][0]["valid"],
            f"citations: {answer['citations']}",
        )
        return answer

    def check_ask(self) -> None:
        with chat_server() as server:
            env = app_env(
                self.imported.home,
                CITEWISE_CHAT_BASE_URL=server.url,
                CITEWISE_DEEPSEEK_API_KEY="test",
            )
            self._ask(env, server)
            expect(len(server.requests) == 2, f"{len(server.requests)} chat requests, not 2")
        listed = self.run("trace", "list", "--json", env=env)
        traces = json.loads(listed.stdout)["traces"]
        shown = self.run("trace", "show", traces[0]["trace_id"], "--json", env=env)
        manifest = json.loads(shown.stdout)["manifest"]
        expect(
            manifest["app_build"] == f"frozen:{self.app.build_id}",
            f"the run manifest names build {manifest['app_build']!r}",
        )
        expect(manifest["app_version"] != "0.0.0+unknown", "the manifest has no app version")

    # keys: the system credential store (Windows Credential Manager), or the environment
    def check_keys(self) -> None:
        home = self.imported.home
        if not WINDOWS:  # no credential store here: the app says to use the environment
            done = self.run(
                "keys", "set", "deepseek", "--json", env=app_env(home), input=SMOKE_KEY + "\n"
            )
            expect(done.returncode == 1, f"keys set without a store: {done.returncode}")
            said = json.loads(done.stdout)
            expect(
                not said["stored"] and said["env"] == "CITEWISE_DEEPSEEK_API_KEY",
                f"keys set without a store said {said}",
            )
            return
        import keyring  # the smoke's own view of the Credential Manager, to check and clean up
        import keyring.errors

        env = app_env(home, keyring=True)
        try:
            done = self.run("keys", "set", "deepseek", "--json", env=env, input=SMOKE_KEY + "\n")
            expect(done.returncode == 0, f"keys set failed: {done.stdout} {done.stderr[-3000:]}")
            expect(json.loads(done.stdout)["stored"], f"keys set: {done.stdout}")
            expect(
                keyring.get_password("citewise", "deepseek") == SMOKE_KEY,
                "the key is not in the Windows Credential Manager under 'citewise'",
            )
            status = json.loads(self.run("keys", "--json", env=env).stdout)
            expect(status["deepseek"]["set"], f"keys status: {status}")
            with chat_server(api_key=SMOKE_KEY) as server:  # any other key gets 401
                self._ask(env | {"CITEWISE_CHAT_BASE_URL": server.url}, server)
            leaked = [
                p for p in home.rglob("*") if p.is_file() and SMOKE_KEY.encode() in p.read_bytes()
            ]
            expect(not leaked, f"the key was written to {leaked}")
        finally:
            with suppress(keyring.errors.PasswordDeleteError):
                keyring.delete_password("citewise", "deepseek")

    # serve --browser
    def check_serve(self) -> None:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        with serving(self.app.cli, port, app_env(self.imported.home)) as (url, process):
            traded = until_up(url, process)
            expect(traded.status_code == 303, f"the token URL answered {traded.status_code}")
            cookies = {COOKIE_NAME: traded.cookies[COOKIE_NAME]}
            page = httpx.get(base + "/", cookies=cookies, timeout=10)
            expect(
                page.status_code == 200 and page.headers.get("x-nicegui-content") == "page",
                f"the page answered {page.status_code}",
            )
            expect("Citewise" in page.text, "the page does not name Citewise")
            assets = sorted(set(re.findall(r'"(/_nicegui/[^"]+\.(?:js|mjs|css))"', page.text)))
            expect(len(assets) > 5, f"few NiceGUI assets on the page: {assets}")
            for asset in assets:  # NiceGUI's bundled files, served from the frozen folder
                r = httpx.get(base + asset, cookies=cookies, timeout=10)
                expect(r.status_code == 200 and r.content, f"{asset}: {r.status_code}")
            bare = httpx.get(base + "/", timeout=5).status_code
            expect(bare == 403, f"without the cookie the page answered {bare}")
            foreign = httpx.get(base + "/", cookies=cookies, headers={"host": "evil.example"})
            expect(foreign.status_code == 421, f"a foreign Host got {foreign.status_code}")

    # what only a frozen program does
    def check_without_console(self) -> None:
        """A windowed program (Citewise.exe; on Linux the same executable with its stdout and
        stderr closed) writes its output to the log in the data directory."""
        home = self.imported.home
        log = home / "logs" / "citewise.log"
        if WINDOWS:
            assert self.app.windowed is not None
            done = subprocess.run(
                [str(self.app.windowed), "status", "--json"],
                env=app_env(home),
                stdin=subprocess.DEVNULL,
                timeout=RUN_TIMEOUT_S,
            )
        else:
            done = subprocess.run(
                [str(self.app.cli), "status", "--json"],
                env=app_env(home),
                stdin=subprocess.DEVNULL,
                preexec_fn=_without_console,
                timeout=RUN_TIMEOUT_S,
            )
        expect(done.returncode == 0, f"status without a console exited {done.returncode}")
        expect(log.is_file(), f"no log at {log}")
        status = json.loads(log.read_text(encoding="utf-8").strip().splitlines()[-1])
        expect(status["active_snapshot"]["documents"] == 2, f"the log says {status}")

    def check_newer_build_beside(self) -> None:
        """Versions unpacked side by side (Citewise-0.1.0 next to Citewise-99.0.0): the running
        one reports the newer one."""
        side = Path(tempfile.mkdtemp(prefix="siblings-", dir=self.app.folder.parent))
        try:
            here = side / f"Citewise-{self.app.version}"
            link_tree(self.app.folder, here)
            newer = side / "Citewise-99.0.0"
            newer.mkdir()
            (newer / "citewise-version.txt").write_text("99.0.0\n", encoding="utf-8")
            done = subprocess.run(
                [str(here / self.app.cli.name), "version", "--check", "--json"],
                env=app_env(self.imported.home),
                capture_output=True,
                text=True,
                encoding="utf-8",
                timeout=RUN_TIMEOUT_S,
            )
            expect(done.returncode == 0, f"version --check failed: {done.stderr[-3000:]}")
            report = json.loads(done.stdout)
            expect(report["running"] == self.app.version, f"version --check: {report}")
            newer_seen = [b["version"] for b in report["newer_installed"]]
            expect(newer_seen == ["99.0.0"], f"newer builds found: {newer_seen}")
        finally:
            shutil.rmtree(side, ignore_errors=WINDOWS)  # an antivirus may still hold a file

    def check_release_zip(self) -> None:
        """The zip build.ps1 wrote beside the folder: everything under Citewise-<version>/."""
        top = f"Citewise-{self.app.version}"
        target = self.app.folder.parent / f"{top}-windows-x64.zip"
        expect(target.is_file(), f"no release zip at {target}")
        with zipfile.ZipFile(target) as archive:
            names = archive.namelist()
            expect(all(n.startswith(top + "/") for n in names), f"names outside {top}/")
            expect(f"{top}/Citewise.exe" in names, "Citewise.exe is not in the zip")
            recorded = archive.read(f"{top}/BUILD_ID").decode().strip()
        expect(recorded == self.app.build_id, "the zip holds another build than the folder")
        files = sum(1 for p in self.app.folder.rglob("*") if p.is_file())
        expect(len(names) == files, f"the zip has {len(names)} files, the folder {files}")

    CHECKS = (
        "check_version",
        "check_bundled_files",
        *(("check_release_zip",) if WINDOWS else ()),  # build.sh writes no zip
        "check_import",
        "check_status_and_ocr",
        "check_ask",
        "check_keys",
        "check_serve",
        "check_without_console",
        "check_newer_build_beside",
    )


def _search() -> Text:
    return Text('Thought: search.\nAction: search_blocks[{"query": "EventEmitter listener"}]')


def _cite(body: dict[str, Any]) -> Text:
    observation = json.loads(body["messages"][-1]["content"].splitlines()[-2])
    citation = observation["payload"]["blocks"][0]["citation"]
    return Text(f"Thought: enough.\nAction: Finish[Listeners run in order.【来源:{citation}】]")


@contextmanager
def chat_server(**kw: Any) -> Iterator[ChatServer]:
    server = ChatServer(**kw).start()
    try:
        yield server
    finally:
        server.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def serving(
    cli: Path, port: int, env: dict[str, str]
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`serve --browser` on `port`: its token URL once printed, and the process, which is
    stopped as Ctrl-C would (Ctrl-Break to its own process group on Windows: there is no
    SIGTERM there, and a killed server would leave its parse workers behind)."""
    process = subprocess.Popen(
        [str(cli), "serve", "--browser", "--port", str(port)],
        cwd=cli.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        creationflags=subprocess.CREATE_NEW_PROCESS_GROUP if WINDOWS else 0,  # type: ignore[attr-defined]
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:\d+/\?token=\S+", line)
        if match is None:
            process.kill()
            raise SmokeFailure(f"serve printed no URL: {line!r} {process.communicate()[1]!r}")
        yield match.group(0), process
    finally:
        if WINDOWS:
            process.send_signal(signal.CTRL_BREAK_EVENT)  # type: ignore[attr-defined]
        else:
            process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def until_up(url: str, process: subprocess.Popen[str], timeout_s: float = 90.0) -> httpx.Response:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            return httpx.get(url, follow_redirects=False, timeout=5)
        except httpx.TransportError:
            if process.poll() is not None:
                assert process.stderr is not None
                raise SmokeFailure(f"serve ended: {process.stderr.read()[-3000:]}") from None
            time.sleep(0.1)
    raise SmokeFailure(f"the frozen server did not answer within {timeout_s:.0f} s")


def link_tree(source: Path, target: Path) -> None:
    """A copy of `source` made of hard links (NTFS and ext4 alike): instant, no extra space."""
    for folder, _, files in os.walk(source):
        into = target / Path(folder).relative_to(source)
        into.mkdir(parents=True, exist_ok=True)
        for name in files:
            os.link(Path(folder) / name, into / name)


def _without_console() -> None:
    """Like a windowed Windows program: no stdout and no stderr at all."""
    os.close(1)
    os.close(2)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0]) if args else REPO / ".build" / "dist" / "citewise"
    if not (folder / "BUILD_ID").is_file():
        print(f"no finished build at {folder} (build it with packaging/build.sh or build.ps1)")
        return 2
    with tempfile.TemporaryDirectory(prefix="citewise-smoke-", ignore_cleanup_errors=True) as tmp:
        smoke = Smoke(folder.resolve(), Path(tmp))
        for name in Smoke.CHECKS:
            check: Callable[[], None] = getattr(smoke, name)
            started = time.monotonic()
            try:
                check()
            except SmokeFailure as failure:
                print(f"FAILED {name}: {failure}", flush=True)
                return 1
            print(f"ok {name} ({time.monotonic() - started:.1f} s)", flush=True)
    print(f"the build at {folder} works ({smoke.app.build_id})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
