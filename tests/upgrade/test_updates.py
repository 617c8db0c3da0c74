"""Updates only when asked: `citewise version --check` reports the running version, newer
builds installed beside it and a newer published version (a loopback feed); without a feed
URL nothing is asked online, and nothing is ever installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from engine.versions.updates import VERSION_FILE, check_for_updates, is_newer

ROOT = Path(__file__).resolve().parents[2]


class Feed:
    def __init__(self) -> None:
        self.body = json.dumps({"version": "0.2.0", "url": "https://example.invalid/0.2.0"})
        self.status = 200
        self.requests = 0


@pytest.fixture
def feed() -> Iterator[tuple[Feed, str]]:
    state = Feed()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.requests += 1
            data = state.body.encode()
            self.send_response(state.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}/citewise.json"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_versions_compare_by_their_numbers() -> None:
    assert is_newer("0.10.0", "0.9.2") and not is_newer("0.1.0", "0.1.0+local")


def test_newer_builds_installed_beside_this_one_are_reported(tmp_path: Path) -> None:
    for name, version in (("Citewise-0.1.0", "0.1.0"), ("Citewise-0.2.1", "0.2.1")):
        (tmp_path / name).mkdir()
        (tmp_path / name / VERSION_FILE).write_text(version + "\n")
    (tmp_path / "Other").mkdir()
    report = check_for_updates("0.1.0", folder=tmp_path / "Citewise-0.1.0")
    assert [b.version for b in report.newer_installed] == ["0.2.1"]
    assert report.feed_url == "" and report.available is None


def test_the_feed_is_asked_only_when_configured_and_reports_a_newer_version(
    feed: tuple[Feed, str],
) -> None:
    state, url = feed
    assert check_for_updates("0.1.0", folder=None).available is None and state.requests == 0
    report = check_for_updates("0.1.0", folder=None, feed_url=url)
    assert state.requests == 1
    assert report.available is not None and report.available.version == "0.2.0"
    assert check_for_updates("0.2.0", folder=None, feed_url=url).available is None
    state.status = 503
    failed = check_for_updates("0.1.0", folder=None, feed_url=url)
    assert failed.available is None and "could not read the update feed" in failed.feed_error


def test_cli_version_check_reports_without_updating_anything(
    feed: tuple[Feed, str], tmp_path: Path
) -> None:
    state, url = feed
    env = {
        **os.environ,
        "CITEWISE_HOME": str(tmp_path / "home"),
        "CITEWISE_UPDATES_FEED_URL": url,
        "NO_PROXY": "127.0.0.1",
    }
    run = subprocess.run(
        [sys.executable, "-m", "cli", "version", "--check", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["available"]["version"] == "0.2.0" and state.requests == 1
    plain = subprocess.run(
        [sys.executable, "-m", "cli", "version"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert plain.returncode == 0 and plain.stdout.startswith("citewise ")
    assert state.requests == 1  # without --check nothing is asked
