"""Why a person's file could not be opened, as a failure reason and a sentence for them.

Windows refuses to open a file that another program holds with an exclusive share mode (Word
while editing, some sync and backup tools): that is "in use", not damage, and the way out is
to close the file there. Nothing here retries or changes the file.
"""

from __future__ import annotations

import errno

# ERROR_SHARING_VIOLATION, ERROR_LOCK_VIOLATION: another process holds the file or a range.
_IN_USE_WINERRORS = frozenset({32, 33})


def read_failure(exc: OSError) -> tuple[str, str]:
    """The reason code (`fail.<reason>` in the UI) and message for a file that cannot be read."""
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
