"""Config: defaults, TOML, environment overrides and errors that name key, value and rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.config import Config, dump_config, load_config, parse_config
from engine.errors import ConfigError


def test_defaults_match_the_spec() -> None:
    c = parse_config({}, {})
    assert c.chat.base_url == "https://api.deepseek.com"
    assert c.chat.model == "deepseek-chat"
    assert c.embedding.provider == "local"
    assert (c.budget.max_context_tokens, c.budget.max_request_tokens) == (100_000, 400_000)
    assert (c.budget.finalization_reserve_tokens, c.budget.max_tool_calls) == (4_000, 8)
    assert c.retrieval.top_k == 5
    assert c.trace.mode == "metadata"


def test_every_setting_can_be_overridden_from_the_environment() -> None:
    env = {
        "CITEWISE_CHAT_BASE_URL": "http://127.0.0.1:9999/v1",
        "CITEWISE_CHAT_MODEL": "m",
        "CITEWISE_BUDGET_MAX_TOOL_CALLS": "3",
        "CITEWISE_RETRIEVAL_BM25_K1": "1.5",
        "CITEWISE_TRACE_MODE": "full",
        "CITEWISE_UI_LANGUAGE": "zh",
        "CITEWISE_DEEPSEEK_API_KEY": "not-a-setting",
    }
    c = parse_config({"chat": {"model": "from-file"}}, env)
    assert c.chat.base_url == "http://127.0.0.1:9999/v1"
    assert c.chat.model == "m"  # the environment wins over the file
    assert c.budget.max_tool_calls == 3
    assert c.retrieval.bm25_k1 == 1.5
    assert c.trace.mode == "full"
    assert c.ui.language == "zh"


@pytest.mark.parametrize(
    ("data", "env", "needles"),
    [
        (
            {},
            {"CITEWISE_BUDGET_MAX_TOOL_CALLS": "lots"},
            ["budget.max_tool_calls", "'lots'", "integer"],
        ),
        ({"budget": {"max_tool_calls": -1}}, {}, ["budget.max_tool_calls", "-1", ">= 0"]),
        ({"ui": {"language": "fr"}}, {}, ["ui.language", "'fr'", "'en'", "'zh'"]),
        ({"chat": {"base_url": "ftp://x"}}, {}, ["chat.base_url", "ftp://x", "http"]),
        ({"chat": {"price": {"output": -2}}}, {}, ["chat.price.output", "-2", ">= 0"]),
        ({"chat": {"colour": "red"}}, {}, ["colour", "allowed keys"]),
        ({"nonsense": 1}, {}, ["nonsense", "sections"]),
        ({"format_version": 9}, {}, ["format_version", "9", "1"]),
        ({}, {"CITEWISE_CHAT_COLOUR": "x"}, ["CITEWISE_CHAT_COLOUR", "colour", "allowed keys"]),
    ],
)
def test_invalid_values_name_key_value_and_rule(
    data: dict[str, object], env: dict[str, str], needles: list[str]
) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(data, env)
    for needle in needles:
        assert needle in str(info.value)


def test_dumped_config_reads_back_identically(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(dump_config(Config()), encoding="utf-8")
    assert load_config(path, {}) == Config()


def test_missing_file_means_defaults_and_broken_toml_is_explained(tmp_path: Path) -> None:
    assert load_config(tmp_path / "absent.toml", {}) == Config()
    bad = tmp_path / "config.toml"
    bad.write_text("[chat\nmodel = 1", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad, {})


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"CITEWISE_BUDGET_FINALIZATION_RESERVE_TOKENS": "500000"}, "finalization_reserve_tokens"),
        ({"CITEWISE_CHAT_MAX_OUTPUT_TOKENS": "200000"}, "max_output_tokens = 200000 must be"),
        ({"CITEWISE_BUDGET_MAX_CONTEXT_TOKENS": "500000"}, "must not exceed"),
    ],
)
def test_contradictory_budgets_are_refused(env: dict[str, str], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        parse_config({}, env)
