"""The conversation store: JSON lines per conversation, crash-tolerant, ids checked."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from actors.conversations import ConversationStore, ConversationTurn
from actors.errors import ConversationError
from engine.harness import EarlierTurn
from engine.paths import DataDir


def _turn(q: str, a: str | None, reason: str = "finished") -> ConversationTurn:
    return ConversationTurn(
        request_id=q,
        question=q,
        answer=a,
        termination_reason=reason,  # type: ignore[arg-type]
        snapshot_id="s1",
        created_at=f"2026-01-01T00:00:0{len(q) % 10}Z",
    )


def test_only_answered_turns_are_carried_oldest_first(tmp_path: Path) -> None:
    store = ConversationStore(DataDir(tmp_path), "default")
    cid = store.new_id()
    store.append(cid, _turn("q1", "a1"))
    store.append(cid, _turn("q2", None, "model_error"))
    store.append(cid, _turn("q3", "a3", "budget"))
    assert store.earlier(cid) == [EarlierTurn("q1", "a1"), EarlierTurn("q3", "a3")]
    assert (tmp_path / "conversations" / "default" / f"{cid}.jsonl").is_file()


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    store = ConversationStore(DataDir(tmp_path), "default")
    cid = store.new_id()
    store.append(cid, _turn("q1", "a1"))
    with open(store.path(cid), "ab") as f:
        f.write(b'{"format_version":1,"request_id":"q2","question":"q2","ans')
    assert [t.question for t in store.load(cid)] == ["q1"]


@pytest.mark.parametrize("bad", ["../../etc/passwd", "c1", "", "c20260101-120000-ABCDEF"])
def test_ids_that_are_not_conversation_ids_are_refused(tmp_path: Path, bad: str) -> None:
    store = ConversationStore(DataDir(tmp_path), "default")
    with pytest.raises(ConversationError):
        store.path(bad)


def test_collections_keep_their_conversations_apart(tmp_path: Path) -> None:
    data = DataDir(tmp_path)
    a, b = ConversationStore(data, "default"), ConversationStore(data, "other")
    cid = a.new_id()
    a.append(cid, _turn("q1", "a1"))
    assert b.load(cid) == [] and not b.exists(cid) and a.exists(cid)
    (summary,) = a.list()
    assert (summary.conversation_id, summary.turns, summary.first_question) == (cid, 1, "q1")
    assert b.list() == []


def test_a_turn_keeps_its_cost_line_and_trace(tmp_path: Path) -> None:
    store = ConversationStore(DataDir(tmp_path), "default")
    cid = store.new_id()
    turn = msgspec.structs.replace(
        _turn("q1", "a1"),
        agent_turns=2,
        tool_calls=1,
        used_tokens=1234,
        cost=0.0021,
        currency="CNY",
        trace_id="f" * 32,
    )
    store.append(cid, turn)
    (loaded,) = store.load(cid)
    assert loaded == turn and loaded.cost_known and loaded.trace == "f" * 32


def test_a_line_written_before_costs_were_kept_still_loads(tmp_path: Path) -> None:
    store = ConversationStore(DataDir(tmp_path), "default")
    cid = store.new_id()
    store.path(cid).parent.mkdir(parents=True)
    store.path(cid).write_bytes(
        b'{"format_version":1,"request_id":"0123456789abcdef0123456789abcdef",'
        b'"question":"old?","answer":"old.","termination_reason":"finished",'
        b'"snapshot_id":"s1","created_at":"2026-01-01T00:00:00Z"}\n'
    )
    (old,) = store.load(cid)
    assert (old.question, old.answer, old.cost, old.currency) == ("old?", "old.", 0.0, "")
    assert not old.cost_known
    assert old.trace == "0123456789abcdef0123456789abcdef"  # derived from the request id
