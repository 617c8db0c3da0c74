"""Why a person's file could not be opened, as a failure reason and a sentence for them.

Windows refuses to open a file that another program holds with an exclusive share mode (Word
while editing, some sync and backup tools): that is "in use", not damage, and the way out is
to close the file there. A path of 260 characters or more cannot be opened at all there unless
the long-paths policy is on. Nothing here retries or changes the file.
"""

from __future__ import annotations

import errno
import sys

# ERROR_SHARING_VIOLATION, ERROR_LOCK_VIOLATION: another process holds the file or a range.
_IN_USE_WINERRORS = frozenset({32, 33})
_MAX_PATH = 260


def read_failure(exc: OSError, system: str = sys.platform) -> tuple[str, str]:
    """The reason code (`fail.<reason>` in the UI) and message for a file that cannot be read."""
    name = exc.filename if isinstance(exc.filename, str) else ""
    if system == "win32" and len(name) >= _MAX_PATH and not name.startswith("\\\\?\\"):
        return (
            "path_too_long",
            f"the file's path is {len(name)} characters long, and Windows (with long paths "
            "off, as it is by default) cannot open paths of 260 characters or more; move it "
            "to a folder nearer the top of the drive and import it again",
        )
    if getattr(exc, "winerror", None) in _IN_USE_WINERRORS or exc.errno == errno.EBUSY:
        return (
            "in_use",
            "the file is open in another program that does not let others read it; close it "
            "there (or wait until that program has finished with it) and import it again",
        )
    if isinstance(exc, FileNotFoundError):
        return "unreadable", "the file is no longer there; it may have been moved or deleted"
    if isinstance(exc, PermissionError):
        return (
            "unreadable",
            "this account is not allowed to read the file; copy it into a folder of your own "
            "and import the copy",
        )
    return "unreadable", f"the file cannot be read ({exc.strerror or exc})"
