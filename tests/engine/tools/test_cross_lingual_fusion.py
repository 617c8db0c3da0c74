"""Cross-language fusion (issue 21): a query in Chinese over an English document, or the
reverse, can hardly match it by keyword, so the vector list speaks for such a block with more
weight; which language a query is in is decided from its script, never from anything else."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import msgspec
import numpy as np

from engine.embedding import LocalEmbedding
from engine.tools import default_retrieval_params
from engine.tools.retrieval import Fusion, query_language, search
from index.snapshot import Snapshot
from tests.engine.tools.snapshots import document, record, section, write_snapshot


def test_a_query_is_in_the_language_most_of_its_text_is_written_in() -> None:
    assert query_language("Debian 里 apt 和 apt-get 该怎么选？") == "zh"
    assert query_language("我不记得自己装过 Python，为什么电脑里会有它？") == "zh"
    assert query_language("What does \\include do in a 中文 LaTeX document?") == "en"
    assert query_language("How many listeners can one EventEmitter have?") == "en"
    assert query_language("??? 123 !!!") == ""


# Chinese blocks that share the query's words (系统, 命令, 关闭…) but answer something else,
# and the one English block that answers it.
NOTES = document(
    "系统笔记",
    section("文件系统", 1, "文件系统的命令行工具可以关闭日志并检查磁盘，系统会记录每次操作。"),
    section("网络系统", 1, "网络系统的命令可以关闭防火墙端口，系统管理员常用这些命令。"),
    section("打印系统", 1, "打印系统用命令关闭打印队列，系统重启后队列会恢复。"),
    section("声音系统", 1, "声音系统的命令能关闭静音，系统托盘里也有开关。"),
    lang="zh",
)
MANUAL = document(
    "Manual",
    section("Halting", 1, "To power off the machine from a terminal, run shutdown -h now as root."),
    section("Printing", 1, "CUPS manages printers; lpstat lists the queues."),
    section("Sound", 1, "PulseAudio mixes the sound of several programs."),
)
QUERY = "在命令行里怎样关闭系统，让机器断电？"


def test_a_chinese_question_finds_the_english_answer_the_keyword_list_cannot_reach(
    tmp_path: Path, open_snapshot: Callable[[Path], Snapshot]
) -> None:
    embedder = LocalEmbedding()
    docs = [record(NOTES, "notes.md"), record(MANUAL, "manual.md")]
    snap = open_snapshot(write_snapshot(tmp_path / "x", docs, embedder))
    vector = np.asarray(anyio.run(embedder.embed, [QUERY]).vectors[0], dtype=np.float32)
    params = msgspec.structs.replace(default_retrieval_params(), top_k=3)
    answer = next(o for o in range(snap.n_blocks) if "shutdown -h now" in snap.block(o).text)
    keyword = search(snap, QUERY, None, None, params, "keyword").ordinals
    assert answer not in keyword  # no keyword of the question is in the English block

    def place(fusion: Fusion) -> int | None:
        found = search(snap, QUERY, vector, None, params, "hybrid", fusion).ordinals
        return found.index(answer) + 1 if answer in found else None

    shipped, flat = place(Fusion()), place(Fusion(cross_lingual_vector_weight=1.0))
    assert shipped is not None
    assert flat is None or shipped < flat
