"""Cyclic garbage collection paused around allocation-heavy work that makes no cycles."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Collection off inside, back to what it was after (on or off), also on errors.

    Parsing a document allocates hundreds of thousands of small objects (spans, rows,
    paragraphs, blocks); each collection they trigger walks every object the process holds,
    which costs 5-10% of the work. None of them form cycles, so nothing is left for later.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
