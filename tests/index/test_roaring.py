"""serialize_many writes, for every set, the very bytes pyroaring writes after run_optimize."""

from __future__ import annotations

import array

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from index import roaring
from index.roaring import deserialize_many, serialize_many


def pyroaring_bytes(values: list[int]) -> bytes:
    bitmap = BitMap(array.array("I", values))
    bitmap.run_optimize()
    return bytes(bitmap.serialize())


def assert_same_as_pyroaring(sets: list[list[int]]) -> None:
    values = np.asarray([v for s in sets for v in s], dtype=np.uint32)
    offsets = np.cumsum([0] + [len(s) for s in sets])
    buf, out = serialize_many(values, offsets)
    assert out[0] == 0 and out[-1] == len(buf)
    for i, s in enumerate(sets):
        got = buf[out[i] : out[i + 1]].tobytes()
        assert got == pyroaring_bytes(s), f"set {i} of {len(s)} values from {s[:1]}"
        assert list(BitMap.deserialize(got)) == s


def runs(count: int, length: int, gap: int, start: int = 0) -> list[int]:
    """`count` runs of `length` consecutive values, `gap` missing values between runs."""
    return [start + r * (length + gap) + i for r in range(count) for i in range(length)]


# Sizes around every choice run_optimize makes: array vs run (a run container wins only when
# strictly smaller), array vs bitset at 4,096 values, bitset vs run at 2,047/2,048 runs, and
# sets spanning several 65,536-value containers.
EDGE_SETS = [
    [7],
    [0, 1],
    [0, 1, 2],
    [0, 1, 2, 3],
    runs(2, 2, 1),
    runs(3, 3, 1),
    runs(4, 3, 2, start=100),
    list(range(4096)),
    runs(2048, 2, 1),
    runs(2048, 3, 1),
    runs(2047, 3, 1),
    runs(2049, 3, 1),
    list(range(0, 8194, 2)),
    list(range(65536)),
    [65535, 65536],
    [1, 70_000, 140_000, 210_000, 280_000],
    list(range(65530, 65542)),
    [2**32 - 3, 2**32 - 2, 2**32 - 1],
    [],
]


def test_edge_sets_serialize_like_pyroaring() -> None:
    assert_same_as_pyroaring(EDGE_SETS)
    assert_same_as_pyroaring([])


_SETS = st.lists(
    st.one_of(
        st.lists(st.integers(0, 300), max_size=40, unique=True),
        st.lists(st.integers(0, 200_000), max_size=12, unique=True),
        st.builds(runs, st.integers(1, 30), st.integers(1, 5), st.integers(1, 3)),
    ).map(sorted),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(sets=_SETS)
def test_any_sets_serialize_like_pyroaring(sets: list[list[int]]) -> None:
    assert_same_as_pyroaring(sets)


def test_offsets_must_cover_the_values() -> None:
    with pytest.raises(ValueError):
        serialize_many(np.arange(3, dtype=np.uint32), np.array([0, 2]))


@pytest.mark.parametrize("pass_values", [1, 3, 50, 5_000])
def test_sets_serialize_the_same_in_passes_of_any_size(
    monkeypatch: pytest.MonkeyPatch, pass_values: int
) -> None:
    monkeypatch.setattr(roaring, "_PASS_VALUES", pass_values)
    rng = np.random.default_rng(pass_values)
    random_sets = [
        sorted(set(rng.integers(0, 100_000, int(rng.integers(0, 60))).tolist())) for _ in range(300)
    ]
    assert_same_as_pyroaring(EDGE_SETS + random_sets + [[], [5], []])


def test_deserialize_many_reads_what_either_writer_wrote(monkeypatch: pytest.MonkeyPatch) -> None:
    sets = [*EDGE_SETS, runs(3, 4, 2, start=65530), [1, 3, 5], list(range(10, 40))]
    values = np.asarray([v for s in sets for v in s], dtype=np.uint32)
    counts = [len(s) for s in sets]
    ours, ours_at = serialize_many(values, np.cumsum([0, *counts]))
    theirs = [pyroaring_bytes(s) for s in sets]  # bitsets and several containers too
    theirs_at = np.cumsum([0] + [len(b) for b in theirs])
    for data, at in ((ours.tobytes(), ours_at), (b"".join(theirs), theirs_at)):
        for pass_values in (1, 7, 1 << 18):
            monkeypatch.setattr(roaring, "_PASS_VALUES", pass_values)
            got, got_counts = deserialize_many(data, at)
            assert got.tolist() == values.tolist()
            assert got_counts.tolist() == counts


@settings(max_examples=200, deadline=None)
@given(sets=_SETS)
def test_any_sets_read_back_as_written(sets: list[list[int]]) -> None:
    values = np.asarray([v for s in sets for v in s], dtype=np.uint32)
    counts = [len(s) for s in sets]
    data, at = serialize_many(values, np.cumsum([0, *counts]))
    got, got_counts = deserialize_many(data.tobytes(), at)
    assert got.tolist() == values.tolist() and got_counts.tolist() == counts


def test_deserialize_many_refuses_offsets_outside_the_data() -> None:
    with pytest.raises(ValueError):
        deserialize_many(b"\x00" * 8, np.array([0, 16]))
