"""Versions of the data and of the program: every on-disk format and its version (`formats`), the
copy-on-write upgrade of a data directory (`upgrade`), and newer builds on request (`updates`)."""

from importlib.metadata import PackageNotFoundError, version


def app_version() -> str:
    """The running Citewise's version (its package metadata; `0.0.0+unknown` without it)."""
    try:
        return version("citewise")
    except PackageNotFoundError:
        return "0.0.0+unknown"
