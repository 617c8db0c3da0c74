"""usearch's extension crashes onnxruntime (the OCR engine's runtime) when onnxruntime loads
after it in the same process. The project imports usearch in one place, index.vectors'
load_usearch, which loads onnxruntime first; these tests prove that nothing else imports it and
that a process can search vectors and then read a scanned page, or the other way round."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("engine", "actors", "index", "web", "cli", "bench", "packaging")

# A real exact search through VectorIndex (which loads usearch through the gate) ...
SEARCH = """
import numpy as np
from index.vectors import VectorIndex
matrix = np.eye(4, dtype="<f2")
index = VectorIndex(
    matrix.tobytes(), np.arange(4, dtype="<u8").tobytes(), np.arange(4, dtype="<u4").tobytes(),
    None, n_blocks=4, dim=4, exact_search_max_blocks=10,
)
assert index.search(np.array([0, 0, 1, 0], dtype=np.float32), 1)[0][0] == 2
"""
# ... and the OCR engine as a scanned page loads it (its onnxruntime sessions created).
OCR = """
from engine.parsing import ocr
ocr._get_engine()
"""


def _imports_usearch(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] == "usearch" for a in node.names)
    return isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "usearch"


def test_only_the_gate_in_index_vectors_imports_usearch_and_it_loads_onnxruntime_first() -> None:
    vectors = REPO / "index" / "vectors.py"
    gate = next(
        n
        for n in ast.parse(vectors.read_text(encoding="utf-8")).body
        if isinstance(n, ast.FunctionDef) and n.name == "load_usearch"
    )
    offenders = []
    for top in SOURCES:
        for path in sorted((REPO / top).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            typing_only = {
                id(n)
                for block in tree.body
                if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
                for n in ast.walk(block)
            }
            offenders += [
                f"{path.relative_to(REPO)}:{node.lineno}"
                for node in ast.walk(tree)
                if _imports_usearch(node)
                and id(node) not in typing_only
                and not (
                    path == vectors and node.lineno in range(gate.lineno, gate.end_lineno or 0)
                )
            ]
    assert offenders == []
    body = ast.unparse(gate)
    assert body.index("import onnxruntime") < body.index("import usearch")


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("order", ["search then OCR", "OCR then search"])
def test_a_process_can_search_vectors_and_read_a_scan_in_either_order(order: str) -> None:
    code = SEARCH + OCR if order == "search then OCR" else OCR + SEARCH
    done = _run(
        code
        + "\nimport sys; print(sorted(m for m in ('onnxruntime', 'usearch') if m in sys.modules))"
    )
    assert done.returncode == 0, (order, done.returncode, done.stderr[-2000:])
    assert done.stdout.strip() == "['onnxruntime', 'usearch']"


def test_the_hazard_is_real_usearch_imported_directly_crashes_onnxruntime() -> None:
    """Why the gate exists: without it the same two imports kill the process."""
    done = _run("import usearch.index\nimport onnxruntime\n")
    if done.returncode == 0:
        pytest.skip("this usearch build no longer crashes onnxruntime; the gate is then harmless")
    assert done.returncode < 0  # killed by a signal (SIGSEGV), not a Python error


def test_a_process_that_opens_no_vectors_loads_neither() -> None:
    done = _run(
        "import sys, index.vectors, index.snapshot, actors.catalog\n"
        "print(sorted(m for m in ('onnxruntime', 'usearch') if m in sys.modules))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
