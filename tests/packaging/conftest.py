"""Starts packaging/build.sh in the background when the session will run the frozen build's
tests (tests/packaging/test_frozen_build.py waits for it in its `built` fixture), runs those
tests last so the build has the whole rest of the suite to finish beside, and stops the build
when the session ends."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.packaging.background_build import BackgroundBuild, build_env

FROZEN_TESTS = Path(__file__).with_name("test_frozen_build.py")
BUILD = pytest.StashKey[BackgroundBuild]()


def _frozen(item: pytest.Item) -> bool:
    return item.path == FROZEN_TESTS


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_frozen)  # stable: every other test keeps its place and order


def pytest_collection_finish(session: pytest.Session) -> None:
    if session.config.option.collectonly or sys.platform != "linux":
        return  # the frozen tests skip off Linux (build.ps1 builds there)
    if any(_frozen(item) for item in session.items):  # after -k / -m / deselection
        session.config.stash[BUILD] = BackgroundBuild(build_env())


def pytest_sessionfinish(session: pytest.Session) -> None:
    build = session.config.stash.get(BUILD, None)
    if build is not None:
        build.stop()


@pytest.fixture(scope="session")
def background_build(request: pytest.FixtureRequest) -> BackgroundBuild:
    """The session's build, or one started now (a session that collected no frozen test)."""
    build = request.config.stash.get(BUILD, None)
    if build is None:
        build = request.config.stash[BUILD] = BackgroundBuild(build_env())
    return build
