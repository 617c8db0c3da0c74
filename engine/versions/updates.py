"""Is there a newer Citewise? Only when the person asks: the running version, newer builds
installed beside this one, and (if a feed URL is configured) the newest published version.

Nothing here downloads or installs anything, and nothing touches the network unless `check`
is called with a feed URL. Installed builds are found by the version file each one-folder build
carries (VERSION_FILE) in sibling folders of this build's folder.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import httpx
import msgspec

from engine.network import ssl_context

VERSION_FILE = "citewise-version.txt"  # one line: the version, in every built install folder
FEED_TIMEOUT_S = 10.0
_PART = re.compile(r"(\d+)")


class InstalledBuild(msgspec.Struct, frozen=True, kw_only=True):
    version: str
    path: str


class FeedEntry(msgspec.Struct, frozen=True, kw_only=True):
    """What an update feed serves (JSON): the newest version and where to read about it."""

    version: str
    url: str = ""
    notes: str = ""


class VersionReport(msgspec.Struct, frozen=True, kw_only=True):
    running: str
    newer_installed: list[InstalledBuild] = []
    feed_url: str = ""  # "" = no feed configured, the network was not asked
    available: FeedEntry | None = None  # a published version newer than the running one
    feed_error: str = ""


def version_key(version: str) -> tuple[int, ...]:
    """Order versions by their numbers ("0.10.0" > "0.9.2"); a local part (+…) is ignored."""
    return tuple(int(n) for n in _PART.findall(version.split("+", 1)[0])[:4])


def is_newer(candidate: str, running: str) -> bool:
    return version_key(candidate) > version_key(running)


def install_folder() -> Path | None:
    """The folder of this one-folder build; None when running from a source checkout."""
    if getattr(sys, "frozen", False):
        return Path(sys.executable).resolve().parent
    return None


def installed_builds(folder: Path | None) -> list[InstalledBuild]:
    """Builds in sibling folders of `folder` (Citewise-0.1.0/, Citewise-0.2.0/ …)."""
    if folder is None or not folder.parent.is_dir():
        return []
    out = []
    for sibling in sorted(folder.parent.iterdir()):
        if sibling == folder:
            continue
        try:
            text = (sibling / VERSION_FILE).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if text:
            out.append(InstalledBuild(version=text.splitlines()[0].strip(), path=str(sibling)))
    return out


def check_for_updates(
    running: str,
    *,
    folder: Path | None,
    feed_url: str = "",
    proxy: str | None = None,
    ca_bundle: str | None = None,
) -> VersionReport:
    """What is newer than `running`: installed beside it, and published at `feed_url`."""
    newer = [b for b in installed_builds(folder) if is_newer(b.version, running)]
    newer.sort(key=lambda b: version_key(b.version), reverse=True)
    if not feed_url:
        return VersionReport(running=running, newer_installed=newer)
    try:
        entry = _fetch(feed_url, proxy, ca_bundle)
    except (httpx.HTTPError, msgspec.DecodeError, msgspec.ValidationError, ValueError) as exc:
        return VersionReport(
            running=running,
            newer_installed=newer,
            feed_url=feed_url,
            feed_error=(
                f"could not read the update feed {feed_url} ({type(exc).__name__}: {exc}); check "
                "the network settings and [updates] feed_url, or try again later"
            ),
        )
    available = entry if is_newer(entry.version, running) else None
    return VersionReport(
        running=running, newer_installed=newer, feed_url=feed_url, available=available
    )


def _fetch(url: str, proxy: str | None, ca_bundle: str | None) -> FeedEntry:
    verify = ssl_context(ca_bundle) if url.startswith("https://") else True
    with httpx.Client(timeout=FEED_TIMEOUT_S, proxy=proxy or None, verify=verify) as client:
        response = client.get(url, headers={"Accept": "application/json"})
        response.raise_for_status()
        return msgspec.json.decode(response.content, type=FeedEntry)
