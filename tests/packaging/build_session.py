"""A pytest plugin, loaded by tests/conftest.py (so pytest-xdist's controller, which loads no
conftest below tests/, has it too): starts packaging/build.sh in the background when the
session will run the frozen build's tests (tests/packaging/test_frozen_build.py waits for it
in its `built` fixture), runs those tests last so the build has the whole rest of the suite to
finish beside, and stops the build when the session ends.

Under pytest-xdist (`./test`) the controller process starts the build, as soon as a worker's
collection shows the frozen tests are selected, and tells each worker the folder where the
build's output and exit status appear: a worker may finish its share of the tests while another
still waits for the build, so no worker can own it.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.corpus import REPO
from tests.packaging.background_build import BackgroundBuild, BuildWatch, build_env

FROZEN_TESTS = Path(__file__).with_name("test_frozen_build.py")
FROZEN_NODEIDS = FROZEN_TESTS.relative_to(REPO).as_posix() + "::"  # as xdist's workers name them
WORKER_INPUT = "citewise_build_folder"  # names the build's folder in each xdist worker's input
BUILD = pytest.StashKey[BackgroundBuild]()
FOLDER = pytest.StashKey[Path]()  # the controller's build folder, told to every worker


def _frozen(item: pytest.Item) -> bool:
    return item.path == FROZEN_TESTS


def _may_build(config: pytest.Config) -> bool:
    # the frozen tests skip off Linux (build.ps1 builds there)
    return not config.option.collectonly and sys.platform == "linux"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_frozen)  # stable: every other test keeps its place and order


def pytest_collection_finish(session: pytest.Session) -> None:
    config = session.config
    if hasattr(config, "workerinput") or not _may_build(config):
        return  # an xdist worker: the controller builds
    if any(_frozen(item) for item in session.items):  # after -k / -m / deselection
        config.stash[BUILD] = BackgroundBuild(build_env())


# -- in pytest-xdist's controller (its hooks are called nowhere else) --------------------------


def _folder(config: pytest.Config) -> Path:
    """Where the controller's build writes, the same for every worker."""
    if FOLDER not in config.stash:
        config.stash[FOLDER] = Path(tempfile.mkdtemp(prefix="citewise-build-"))
    return config.stash[FOLDER]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    node.workerinput[WORKER_INPUT] = str(_folder(node.config))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: Sequence[str]) -> None:
    config = node.config
    if BUILD in config.stash or not _may_build(config):
        return
    if any(nodeid.startswith(FROZEN_NODEIDS) for nodeid in ids):
        config.stash[BUILD] = BackgroundBuild(build_env(), _folder(config))


def pytest_sessionfinish(session: pytest.Session) -> None:
    build = session.config.stash.get(BUILD, None)
    if build is not None:
        build.stop()  # removes its folder
    elif FOLDER in session.config.stash:  # the controller's, when no build was needed
        shutil.rmtree(session.config.stash[FOLDER], ignore_errors=True)


@pytest.fixture(scope="session")
def background_build(request: pytest.FixtureRequest) -> BuildWatch:
    """The session's build (in an xdist worker: the controller's), or one started now (a
    session that collected no frozen test)."""
    workerinput = getattr(request.config, "workerinput", None)
    if workerinput is not None:
        return BuildWatch(Path(workerinput[WORKER_INPUT]))
    build = request.config.stash.get(BUILD, None)
    if build is None:
        build = request.config.stash[BUILD] = BackgroundBuild(build_env())
    return BuildWatch(build.folder)
