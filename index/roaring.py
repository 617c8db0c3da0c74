"""Many roaring bitmaps serialized at once, byte for byte as pyroaring writes them.

`serialize_many` produces what `BitMap(values); run_optimize(); serialize()` gives for each set
(the portable format of the Roaring spec), computed with numpy for all sets together instead of
one Python call per set. Only sets of one array or run container take the vectorised path (all
sets of a snapshot under 65,536 blocks whose cardinality stays under 4,097); any other set is
serialized by pyroaring itself. Never use it for a format pyroaring could not read back.
"""

from __future__ import annotations

import array
import itertools

import numpy as np
import numpy.typing as npt
from pyroaring import BitMap

# From the Roaring format spec (and CRoaring's roaring_array.h / containers).
_COOKIE_NO_RUN = 12346
_COOKIE_RUN = 12347
_ARRAY_MAX = 4096  # an array container holds at most this many values, then it is a bitset
_ARRAY_HEADER = 16  # cookie, container count, key, cardinality - 1, one offset
_RUN_HEADER = 9  # cookie (with count - 1), run-flag byte, key, cardinality - 1 (no offsets)


# Values serialized per pass: the passes' temporaries (a dozen arrays of this length) stay
# small enough to be reused from one pass to the next instead of paging in fresh memory, which
# for millions of postings cost more than the work itself.
_PASS_VALUES = 1 << 18


def serialize_many(
    values: npt.NDArray[np.uint32], offsets: npt.NDArray[np.integer]
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """Serialize each set `values[offsets[i] : offsets[i + 1]]` (strictly ascending) as a
    run-optimised roaring bitmap; return the serializations concatenated and their byte
    offsets ([n_sets + 1], starting at 0)."""
    values = np.asarray(values, dtype=np.uint32)
    bounds = np.asarray(offsets, dtype=np.int64)
    n_sets = len(bounds) - 1
    if n_sets < 0 or (n_sets >= 0 and (bounds[0] != 0 or bounds[-1] != len(values))):
        raise ValueError("offsets must start at 0 and end at len(values)")
    buffers: list[npt.NDArray[np.uint8]] = []
    out_offsets = [np.zeros(1, dtype=np.int64)]
    size = 0
    for lo, hi in _passes(bounds, _PASS_VALUES):
        first = int(bounds[lo])
        buf, part = _serialize_pass(values[first : int(bounds[hi])], bounds[lo : hi + 1] - first)
        buffers.append(buf)
        out_offsets.append(part[1:] + size)
        size += len(buf)
    joined = np.concatenate(buffers) if buffers else np.zeros(0, dtype=np.uint8)
    return joined, np.concatenate(out_offsets)


def _passes(bounds: npt.NDArray[np.int64], size: int) -> list[tuple[int, int]]:
    """Consecutive sets [lo, hi) whose bounds span about `size` (a larger set alone)."""
    cuts = [0]
    while cuts[-1] < len(bounds) - 1:
        at = cuts[-1]
        limit = int(bounds[at]) + size
        cuts.append(max(at + 1, int(np.searchsorted(bounds, limit, side="right")) - 1))
    return list(itertools.pairwise(cuts))


def _serialize_pass(
    values: npt.NDArray[np.uint32], bounds: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """`serialize_many` of sets whose bounds start at 0 and end at len(values)."""
    n_sets = len(bounds) - 1
    n = len(values)
    counts = np.diff(bounds)
    owner = np.repeat(np.arange(n_sets, dtype=np.int64), counts)
    high = (values >> np.uint32(16)).astype(np.int64)
    low = (values & np.uint32(0xFFFF)).astype(np.int64)

    # A container starts at each set's first value and wherever the high 16 bits change; a
    # run starts at each container start and wherever a value does not follow its previous.
    new_container = np.ones(n, dtype=np.bool_)
    new_container[1:] = (owner[1:] != owner[:-1]) | (high[1:] != high[:-1])
    new_run = new_container.copy()
    new_run[1:] |= low[1:] != low[:-1] + 1
    container_starts = np.flatnonzero(new_container)
    container_of = np.cumsum(new_container) - 1
    cardinality = np.diff(np.append(container_starts, n))
    run_starts = np.flatnonzero(new_run)
    n_runs = np.bincount(container_of[run_starts], minlength=len(container_starts))
    # run_optimize: a run container when it serializes smaller (ties keep array or bitset).
    as_run = np.where(
        cardinality <= _ARRAY_MAX, 2 + 4 * n_runs < 2 * cardinality, 2 + 4 * n_runs < 8192
    )
    simple_container = (cardinality <= _ARRAY_MAX) | as_run
    containers = np.bincount(owner[container_starts], minlength=n_sets)
    first = np.searchsorted(container_starts, bounds[:-1])  # each set's first container
    simple = containers == 1
    simple[simple] = simple_container[first[simple]]
    runs = np.zeros(n_sets, dtype=np.bool_)
    runs[simple] = as_run[first[simple]]
    arrays = simple & ~runs

    sizes = np.zeros(n_sets, dtype=np.int64)
    sizes[arrays] = _ARRAY_HEADER + 2 * counts[arrays]
    sizes[runs] = _RUN_HEADER + 2 + 4 * n_runs[first[runs]]
    others = {
        int(i): _pyroaring(values[bounds[i] : bounds[i + 1]]) for i in np.flatnonzero(~simple)
    }
    for i, data in others.items():
        sizes[i] = len(data)
    out_offsets = np.zeros(n_sets + 1, dtype=np.int64)
    np.cumsum(sizes, out=out_offsets[1:])
    buf = np.zeros(int(out_offsets[-1]), dtype=np.uint8)

    start = out_offsets[:-1]
    set_key = np.zeros(n_sets, dtype=np.int64)
    set_key[simple] = high[bounds[:-1][simple]]
    at = start[arrays]
    _put(buf, at, _COOKIE_NO_RUN, 4)
    _put(buf, at + 4, 1, 4)
    _put(buf, at + 8, set_key[arrays], 2)
    _put(buf, at + 10, counts[arrays] - 1, 2)
    _put(buf, at + 12, _ARRAY_HEADER, 4)
    in_array = arrays[owner]
    value_at = start[owner] + _ARRAY_HEADER + 2 * (np.arange(n) - bounds[owner])
    _put(buf, value_at[in_array], low[in_array], 2)

    at = start[runs]
    _put(buf, at, _COOKIE_RUN, 4)  # (containers - 1) << 16 is 0
    _put(buf, at + 4, 1, 1)  # container 0 is a run container
    _put(buf, at + 5, set_key[runs], 2)
    _put(buf, at + 7, counts[runs] - 1, 2)
    _put(buf, at + _RUN_HEADER, n_runs[first[runs]], 2)
    run_owner = owner[run_starts]
    in_run = runs[run_owner]
    length = np.diff(np.append(run_starts, n))
    rank = np.arange(len(run_starts)) - np.searchsorted(run_starts, bounds[:-1])[run_owner]
    run_at = start[run_owner] + _RUN_HEADER + 2 + 4 * rank
    _put(buf, run_at[in_run], low[run_starts[in_run]], 2)
    _put(buf, run_at[in_run] + 2, length[in_run] - 1, 2)

    for i, data in others.items():
        buf[out_offsets[i] : out_offsets[i + 1]] = np.frombuffer(data, dtype=np.uint8)
    return buf, out_offsets


def _pyroaring(values: npt.NDArray[np.uint32]) -> bytes:
    bitmap = BitMap(array.array("I", values.tobytes()))
    bitmap.run_optimize()
    return bytes(bitmap.serialize())


def _put(buf: npt.NDArray[np.uint8], at: npt.NDArray[np.int64], value: object, width: int) -> None:
    """Write `value` (scalar or per position) little-endian, `width` bytes at each of `at`."""
    v = np.broadcast_to(np.asarray(value, dtype=np.int64), at.shape)
    for byte in range(width):
        buf[at + byte] = (v >> (8 * byte)) & 0xFF


def deserialize_many(
    data: object, offsets: npt.NDArray[np.integer]
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
    """The sets serialized at `data[offsets[i] : offsets[i + 1]]` (any portable roaring
    bitmaps), decoded: their values concatenated, and each set's value count.

    The two forms `serialize_many` writes itself (one array container, one run container) are
    decoded with numpy for all sets together; any other bitmap by pyroaring.
    """
    buf = np.frombuffer(data, dtype=np.uint8)  # type: ignore[call-overload]
    bounds = np.asarray(offsets, dtype=np.int64)
    if len(bounds) and (bounds[0] < 0 or bounds[-1] > len(buf) or np.any(np.diff(bounds) < 0)):
        raise ValueError("offsets must ascend within the data")
    parts = [
        _deserialize_pass(buf, bounds[lo : hi + 1]) for lo, hi in _passes(bounds, 2 * _PASS_VALUES)
    ]
    if not parts:
        return np.zeros(0, dtype=np.uint32), np.zeros(0, dtype=np.int64)
    return np.concatenate([v for v, _ in parts]), np.concatenate([c for _, c in parts])


def _deserialize_pass(
    buf: npt.NDArray[np.uint8], bounds: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
    """`deserialize_many` of the sets at `bounds` (byte offsets into `buf`)."""
    starts, lengths = bounds[:-1], np.diff(bounds)

    def u16(at: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        return buf[at].astype(np.int64) | (buf[at + 1].astype(np.int64) << 8)

    # Headers, read only where the set is long enough to hold them.
    arrays = lengths >= _ARRAY_HEADER + 2
    at = starts[arrays]
    arrays[arrays] = (
        (u16(at) == _COOKIE_NO_RUN)
        & (u16(at + 2) == 0)
        & (u16(at + 4) == 1)  # one container
        & (u16(at + 6) == 0)
        & (u16(at + 12) == _ARRAY_HEADER)
        & (u16(at + 14) == 0)
        & (lengths[arrays] == _ARRAY_HEADER + 2 * (u16(at + 10) + 1))
    )
    runs = (lengths >= _RUN_HEADER + 2) & ~arrays
    at = starts[runs]
    runs[runs] = (u16(at) == _COOKIE_RUN) & (u16(at + 2) == 0) & (buf[at + 4] == 1)
    at = starts[runs]
    n_runs = np.zeros(len(starts), dtype=np.int64)
    n_runs[runs] = u16(at + _RUN_HEADER)
    runs &= lengths == _RUN_HEADER + 2 + 4 * n_runs

    counts = np.zeros(len(starts), dtype=np.int64)
    counts[arrays] = u16(starts[arrays] + 10) + 1
    others = {
        int(i): _decoded(buf, starts[i], lengths[i]) for i in np.flatnonzero(~(arrays | runs))
    }
    for i, values in others.items():
        counts[i] = len(values)
    # A run set's count is the sum of its run lengths (checked against its header below).
    run_sets = np.flatnonzero(runs)
    run_owner = np.repeat(run_sets, n_runs[run_sets])
    first_run = np.cumsum(n_runs[run_sets]) - n_runs[run_sets]
    rank = np.arange(len(run_owner)) - np.repeat(first_run, n_runs[run_sets])
    run_at = starts[run_owner] + _RUN_HEADER + 2 + 4 * rank
    run_start, run_length = u16(run_at), u16(run_at + 2) + 1
    np.add.at(counts, run_owner, run_length)
    if np.any(counts[runs] != u16(starts[runs] + 7) + 1):
        raise ValueError("a run container's cardinality disagrees with its runs")

    out_at = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out_at[1:])
    values = np.zeros(int(out_at[-1]), dtype=np.uint32)
    key_of = np.zeros(len(starts), dtype=np.int64)
    key_of[arrays] = u16(starts[arrays] + 8)
    key_of[runs] = u16(starts[runs] + 5)

    array_sets = np.flatnonzero(arrays)
    sizes = counts[array_sets]
    owner = np.repeat(array_sets, sizes)
    j = np.arange(len(owner)) - np.repeat(np.cumsum(sizes) - sizes, sizes)  # index in its set
    low = u16(starts[owner] + _ARRAY_HEADER + 2 * j)
    values[out_at[owner] + j] = (key_of[owner] << 16) | low

    owner = np.repeat(run_owner, run_length)
    first_value = np.cumsum(run_length) - run_length
    offset = np.arange(len(owner)) - np.repeat(first_value, run_length)
    low = np.repeat(run_start, run_length) + offset
    run_out = np.repeat(out_at[run_owner] + _run_base(run_owner, run_length), run_length)
    values[run_out + offset] = (key_of[owner] << 16) | low

    for i, decoded in others.items():
        values[out_at[i] : out_at[i + 1]] = decoded
    return values, counts


def _run_base(
    run_owner: npt.NDArray[np.int64], run_length: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """For each run, how many values of its set the runs before it hold."""
    before = np.cumsum(run_length) - run_length
    set_start = np.ones(len(run_owner), dtype=np.bool_)
    set_start[1:] = run_owner[1:] != run_owner[:-1]
    first_of_set = np.maximum.accumulate(np.where(set_start, np.arange(len(run_owner)), 0))
    base: npt.NDArray[np.int64] = before - before[first_of_set]
    return base


def _decoded(
    buf: npt.NDArray[np.uint8], start: np.int64, length: np.int64
) -> npt.NDArray[np.uint32]:
    bitmap = BitMap.deserialize(buf[int(start) : int(start + length)].tobytes())
    return np.frombuffer(bitmap.to_array(), dtype=np.uint32)
