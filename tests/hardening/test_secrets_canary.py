"""Secrets canary: unique keys in the keyring and in the environment, a full session through the
real CLI, then every byte written anywhere is searched for them.

The session: import (the embedding server receives the keyring key), key tests, questions (the
chat server receives the keyring key), provider errors that echo the Authorization header back,
trace show / replay / bundle, upgrade and backup listing, a kill -9 in the middle of an import
and the resume, and the browser UI started and stopped. The scan covers the data directory, the
temporary directory the processes were given (TMPDIR), the bundle (unzipped too) and everything
the processes printed, in raw, URL-encoded, hex and base64 form: zero occurrences.

The redaction mechanism itself (engine/redaction.py) is checked in a fresh interpreter: log
handlers present before and added after `install()`, uvicorn's loggers, %-arguments, exception
text, tracebacks and uncaught exceptions in the main and other threads.
"""

from __future__ import annotations

import base64
import io
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from keyring.backend import KeyringBackend
from keyring.errors import PasswordDeleteError, PasswordSetError

from tests.corpus import REPO
from tests.servers.chat_server import ChatServer, Status, Text
from tests.servers.embedding_server import DEFAULT_DIMENSIONS, Delay, EmbeddingServer
from tests.servers.embedding_server import Status as EmbeddingStatus

pytestmark = pytest.mark.slow  # tens of seconds: started first (tests/conftest.py)

KEYRING_ENV = "CITEWISE_CANARY_KEYRING"  # not a settings section: ignored by the config


class CanaryKeyring(KeyringBackend):
    """An in-memory, read-only keyring for the CLI subprocesses (seeded from the environment
    of the test, never from a file); loaded through PYTHON_KEYRING_BACKEND."""

    priority = 10  # type: ignore[assignment]

    def get_password(self, service: str, username: str) -> str | None:
        value = json.loads(os.environ.get(KEYRING_ENV, "{}")).get(username)
        return str(value) if value else None

    def set_password(self, service: str, username: str, password: str) -> None:
        raise PasswordSetError("the canary keyring is read-only")

    def delete_password(self, service: str, username: str) -> None:
        raise PasswordDeleteError("the canary keyring is read-only")


@dataclass(frozen=True)
class Canaries:
    keyring_chat: str = field(default_factory=lambda: "sk-" + secrets.token_hex(20))
    # Not key-shaped: only the remembered-secret path of the redaction can catch it.
    keyring_embedding: str = field(default_factory=lambda: "cwemb" + secrets.token_hex(20))
    env_chat: str = field(default_factory=lambda: "cwenvchat" + secrets.token_hex(16))
    env_embedding: str = field(default_factory=lambda: "cwenvemb" + secrets.token_hex(16))

    def all(self) -> list[str]:
        return [self.keyring_chat, self.keyring_embedding, self.env_chat, self.env_embedding]


def forms(secret: str) -> set[bytes]:
    """Every encoding in which a leaked key would still be readable."""
    raw = secret.encode()
    found = {
        raw,
        quote(secret, safe="").encode(),
        "".join(f"%{b:02X}" for b in raw).encode(),
        "".join(f"%{b:02x}" for b in raw).encode(),
        raw.hex().encode(),
        raw.hex().upper().encode(),
        secret.encode("utf-16-le"),
        json.dumps(secret).encode(),
    }
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw)
        start, end = (8 * shift + 5) // 6, 8 * (shift + len(raw)) // 6
        found.add(encoded[start:end])
        found.add(base64.urlsafe_b64encode(b"\0" * shift + raw)[start:end])
    return found


def occurrences(data: bytes, keys: list[str]) -> list[str]:
    """Which keys (in which form) occur in `data`; zip members are searched unpacked too."""
    hits = [f"{k[:6]}…:{f[:12]!r}" for k in keys for f in forms(k) if f in data]
    if data[:4] == b"PK\x03\x04":
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            for name in zf.namelist():
                hits += [f"{name}: {h}" for h in occurrences(zf.read(name), keys)]
    return hits


def test_the_scanner_finds_every_encoding_of_a_key() -> None:
    key = "cw" + secrets.token_hex(16)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("x.json", json.dumps({"h": f"Bearer {key}"}))
    samples = [
        f"Authorization: Bearer {key}\n".encode(),
        b"auth=" + base64.b64encode(b"user:" + key.encode()),
        b"auth=" + base64.b64encode(b"us:" + key.encode()),
        b"k=" + quote(key).encode(),
        key.encode().hex().encode(),
        buffer.getvalue(),
    ]
    for sample in samples:
        assert occurrences(sample, [key]), sample[:40]
    assert not occurrences(f"…{key[-4:]} (masked)".encode(), [key])


# -- the session -------------------------------------------------------------------------------
@dataclass
class Session:
    home: Path
    tmp: Path
    env: dict[str, str]
    printed: list[tuple[str, bytes]] = field(default_factory=list)

    def cli(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[bytes]:
        proc = subprocess.run(
            [sys.executable, "-m", "cli", *args],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            timeout=timeout,
        )
        self.printed.append((" ".join(args), proc.stdout + proc.stderr))
        return proc


DOCS = {
    "rivers.md": "# Rivers\n\nThe Amazon carries more water than any other river.\n\n"
    "## Deltas\n\nA delta forms where a river meets slow water.\n",
    "keys.md": "# Keys\n\nAPI keys belong in the credential store, never in a file.\n",
}


@pytest.fixture
def canaries() -> Canaries:
    return Canaries()


@pytest.fixture
def session(
    tmp_path: Path,
    canaries: Canaries,
    chat_server: ChatServer,
    embedding_server: EmbeddingServer,
) -> Session:
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    chat_server.api_key = canaries.keyring_chat  # any other key gets 401
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CITEWISE_", "PYTEST_"))}
    env.update(
        CITEWISE_HOME=str(home),
        TMPDIR=str(tmp),
        PYTHONUNBUFFERED="1",
        PYTHON_KEYRING_BACKEND=f"{__name__}.CanaryKeyring",
        CITEWISE_DEEPSEEK_API_KEY=canaries.env_chat,
        CITEWISE_EMBEDDING_API_KEY=canaries.env_embedding,
        CITEWISE_CHAT_BASE_URL=chat_server.url,
        CITEWISE_CHAT_TIMEOUT_S="10",
        CITEWISE_EMBEDDING_PROVIDER="openai_compatible",
        CITEWISE_EMBEDDING_BASE_URL=embedding_server.url,
        CITEWISE_EMBEDDING_MODEL="scripted",
        CITEWISE_EMBEDDING_DIMENSIONS=str(DEFAULT_DIMENSIONS),
        CITEWISE_EMBEDDING_BATCH_SIZE="1",
        CITEWISE_EMBEDDING_CONCURRENCY="1",
        CITEWISE_EMBEDDING_TIMEOUT_S="10",
        CITEWISE_TRACE_MODE="full",  # prompts, tool results and answers go to artifacts
        **{
            KEYRING_ENV: json.dumps(
                {"deepseek": canaries.keyring_chat, "embedding": canaries.keyring_embedding}
            )
        },
    )
    return Session(home, tmp, env)


def _write_docs(folder: Path, docs: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in docs.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _search() -> Text:
    return Text('Thought: search.\nAction: search_blocks[{"query": "which river carries most"}]')


def _finish(body: dict[str, Any]) -> Text:
    return Text("Thought: enough.\nAction: Finish[The Amazon carries the most water.]")


def _kill_mid_import(s: Session, server: EmbeddingServer, docs: Path) -> None:
    """Start an import whose embedding call hangs, kill -9 it once the call is in flight."""
    server.script(Delay(30.0))
    before = len(server.requests)
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "import", str(docs)],
        cwd=REPO,
        env=s.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while len(server.requests) <= before and time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the import ended before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        out, err = proc.communicate(timeout=30)
        s.printed.append(("import (killed)", out + err))
    assert proc.returncode == -signal.SIGKILL


def _serve_briefly(s: Session) -> None:
    """Start the browser UI, open two pages with the token, stop it; keep what it printed."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "serve", "--browser"],
        cwd=REPO,
        env=s.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        url = line.split("Open Citewise at: ", 1)[1].strip()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                page = httpx.get(url, follow_redirects=True, timeout=5)
                break
            except httpx.TransportError:
                time.sleep(0.2)
        assert page.status_code == 200
        s.printed.append(("serve pages", page.content))
        settings = httpx.get(url.split("?")[0] + "settings", cookies=page.cookies, timeout=20)
        s.printed.append(("serve settings", settings.content))
    finally:
        proc.terminate()
        try:
            out, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        s.printed.append(("serve", line.encode() + out + err))


def _files(*roots: Path) -> Iterator[Path]:
    for root in roots:
        for dirpath, _, filenames in os.walk(root):
            for name in filenames:
                path = Path(dirpath) / name
                if path.is_file() and not path.is_symlink():
                    yield path


def test_no_key_is_written_or_printed_anywhere_after_a_full_session(
    session: Session,
    canaries: Canaries,
    chat_server: ChatServer,
    embedding_server: EmbeddingServer,
    tmp_path: Path,
) -> None:
    s = session
    docs = _write_docs(tmp_path / "docs", DOCS)

    # Import: the embedding server gets the keyring key, never the environment's.
    imported = s.cli("import", str(docs))
    assert imported.returncode == 0, imported.stderr
    auth = {r.headers.get("authorization") for r in embedding_server.requests}
    assert auth == {f"Bearer {canaries.keyring_embedding}"}

    assert s.cli("keys").returncode == 0
    s.cli("keys", "test")  # the outcome depends on what the servers answer; it must not leak

    # A question, answered with a search, then its trace in every form.
    chat_server.script(_search(), _finish)
    asked = s.cli("ask", "--json", "Which river carries the most water?")
    assert asked.returncode == 0, asked.stderr
    assert chat_server.requests[-1].headers["authorization"] == f"Bearer {canaries.keyring_chat}"
    listed = s.cli("trace", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    trace_id = json.loads(listed.stdout)["traces"][0]["trace_id"]
    for args in (["show", trace_id], ["show", trace_id, "--json"], ["replay", trace_id]):
        assert s.cli("trace", *args).returncode in (0, 1), args
    bundle_path = tmp_path / "bundle.zip"
    bundled = s.cli("trace", "bundle", trace_id, "-o", str(bundle_path))
    assert bundled.returncode == 0, bundled.stderr

    # Provider errors whose bodies echo the Authorization header back.
    chat_server.script(Status(400, "rejected", echo_key=True))
    refused = s.cli("ask", "Tell me about deltas?")
    assert refused.returncode == 1
    assert b"[redacted]" in refused.stderr  # the vendor's words were quoted, minus the key
    chat_server.script(Status(500, "down", echo_key=True), Status(500, "down", echo_key=True))
    s.cli("ask", "--json", "And again?")
    embedding_server.script(EmbeddingStatus(400, "bad input", echo_key=True))
    more = _write_docs(tmp_path / "more", {"lakes.md": "# Lakes\n\nLakes hold still water.\n"})
    failed = s.cli("import", str(more))
    assert failed.returncode in (1, 3), failed.stderr
    assert b"[redacted]" in failed.stdout + failed.stderr  # echoed, then scrubbed
    s.cli("status", "--json")
    s.cli("snapshots", "list", "--json")

    # A crash in the middle of an import, then the resume.
    crash_docs = _write_docs(tmp_path / "crash", {"seas.md": "# Seas\n\nSeas are salty.\n"})
    _kill_mid_import(s, embedding_server, crash_docs)
    resumed = s.cli("import")
    assert resumed.returncode in (0, 3), resumed.stderr

    # Upgrade (nothing to upgrade on current data) and a backup of everything, then listed.
    s.cli("upgrade", "--yes")
    made = s.cli("backup", "create", "--json")
    assert made.returncode == 0, made.stderr
    listed = s.cli("backup", "list", "--json")
    assert json.loads(made.stdout)["backup_id"].encode() in listed.stdout

    _serve_briefly(s)

    keys = canaries.all()
    leaks: list[str] = []
    scanned = 0
    for path in _files(s.home, s.tmp, bundle_path.parent):
        scanned += 1
        leaks += [
            f"{path.relative_to(tmp_path)}: {h}" for h in occurrences(path.read_bytes(), keys)
        ]
    for what, text in s.printed:
        leaks += [f"output of `{what}`: {h}" for h in occurrences(text, keys)]
    print(
        f"\nsecrets canary: {scanned} files and {len(s.printed)} outputs scanned, "
        f"{len(leaks)} occurrences"
    )
    assert scanned > 20 and bundle_path.is_file()
    assert leaks == []


# -- the redaction mechanism -------------------------------------------------------------------
REDACTION_SCRIPT = r"""
import logging, sys, threading, io
from engine import redaction
from engine.secrets import get_key

before = logging.StreamHandler(sys.stdout)
logging.getLogger().addHandler(before)
logging.getLogger().setLevel(logging.INFO)
redaction.install()
key = get_key("deepseek")  # read from the environment: remembered for redaction
assert key and key.startswith("cwred")

late = logging.StreamHandler(sys.stdout)  # added after install
logging.getLogger("late").addHandler(late)
logging.getLogger("late").propagate = False
uvicorn = logging.getLogger("uvicorn.error")
uvicorn.addHandler(logging.StreamHandler(sys.stdout))
uvicorn.propagate = False

logging.info("message holds %s", key)
logging.info("dict args %(k)s", {"k": key})
logging.getLogger("late").warning("late handler %s and %r", key, [key])
uvicorn.error("uvicorn says Authorization: Bearer %s", key)
access = logging.getLogger("uvicorn.access")
access.addHandler(logging.StreamHandler(sys.stdout))
access.propagate = False
access.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:1", "GET", "/?key=" + key, "1.1", 200)
try:
    raise RuntimeError(f"request failed with header Bearer {key}")
except RuntimeError:
    logging.getLogger("late").exception("it broke")
    logging.exception("root broke")
print(redaction.redact(f"printed {key}"))
threading.Thread(target=lambda: (_ for _ in ()).throw(ValueError(key))).start()
raise SystemError(f"uncaught {key}")
"""


def test_redaction_covers_every_handler_exception_and_traceback(tmp_path: Path) -> None:
    key = "cwred" + secrets.token_hex(16)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITEWISE_")}
    env.update(
        CITEWISE_DEEPSEEK_API_KEY=key,
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
        CITEWISE_HOME=str(tmp_path),
    )
    proc = subprocess.run(
        [sys.executable, "-c", REDACTION_SCRIPT],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1  # the uncaught SystemError
    assert key not in out, out
    # Everything was still logged, with the key replaced.
    for line in (
        "message holds [redacted]",
        "dict args [redacted]",
        "late handler [redacted] and ['[redacted]']",
        "uvicorn says Authorization: [redacted]",
        "/?key=[redacted]",
        "RuntimeError: request failed with header [redacted]",
        "printed [redacted]",
        "ValueError: [redacted]",
        "SystemError: uncaught [redacted]",
    ):
        assert line in out, (line, out)
    assert out.count("Traceback") >= 4  # two logged exceptions, the thread, the main thread


def test_redact_replaces_encoded_forms_and_key_shaped_text() -> None:
    from engine import redaction

    key = "cwunit" + secrets.token_hex(12)
    redaction.remember(key)
    text = (
        f"raw {key} url {quote(key)} b64 {base64.b64encode(b'u:' + key.encode()).decode()} "
        "vendor sk-abcdef123456 header Bearer xyz.abc"
    )
    clean = redaction.redact(text)
    assert not occurrences(clean.encode(), [key])
    assert "sk-abcdef" not in clean and "xyz.abc" not in clean
    assert clean.startswith("raw [redacted] url [redacted] b64 ")
    assert redaction.redact("a short key ab stays", "ab") == "a short key ab stays"
