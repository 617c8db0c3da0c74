"""Tool descriptions: the schema the model is shown is the one its arguments are held to."""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.tools import (
    TOOL_NAMES,
    ErrorResult,
    ToolName,
    arguments_schema,
    arguments_type,
    decode_arguments,
    render_tools,
    tool_descriptions,
)


def schema_accepts(schema: dict[str, Any], value: Any) -> bool:
    """A JSON Schema check covering exactly the keywords the tool schemas use."""
    kind = schema.get("type")
    if kind == "object":
        if not isinstance(value, dict):
            return False
        properties = schema.get("properties", {})
        if any(name not in value for name in schema.get("required", [])):
            return False
        if schema.get("additionalProperties") is False and set(value) - set(properties):
            return False
        return all(schema_accepts(properties[k], v) for k, v in value.items() if k in properties)
    if kind == "array":
        return (
            isinstance(value, list)
            and len(value) >= schema.get("minItems", 0)
            and all(schema_accepts(schema.get("items", {}), v) for v in value)
        )
    if kind == "string":
        return (
            isinstance(value, str)
            and len(value) >= schema.get("minLength", 0)
            and ("pattern" not in schema or re.search(schema["pattern"], value) is not None)
        )
    raise AssertionError(f"the tool schemas use a keyword this check does not know: {schema}")


def test_described_schema_is_generated_from_the_struct_the_executor_decodes_into() -> None:
    for description in tool_descriptions():
        kind = arguments_type(description.name)
        _, components = msgspec.json.schema_components([kind])
        expected = {k: v for k, v in components[kind.__name__].items() if k != "title"}
        assert description.arguments == expected == arguments_schema(description.name)


def test_every_tool_is_described_with_what_an_empty_result_does_not_prove() -> None:
    text = render_tools()
    for description in tool_descriptions():
        assert f"## {description.name}\n" in text
        assert json.dumps(description.arguments, separators=(",", ":"), ensure_ascii=False) in text
        assert description.empty_does_not_prove in text
    assert [d.name for d in tool_descriptions()] == list(TOOL_NAMES)
    assert "top 7 candidate blocks" in render_tools(top_k=7)
    assert render_tools() == render_tools()  # part of the prompt's identity


_text = st.one_of(
    st.sampled_from(["x", " events ", "锁", "a b"]), st.sampled_from(["", " ", "\t\n"])
)
_junk = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 3), _text),
    lambda inner: st.lists(inner, max_size=3),
    max_leaves=6,
)


def _values(spec: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values shaped like `spec`, valid or just off (blank, empty, wrong inside)."""
    if spec["type"] == "array":
        item = _values(spec["items"])
        return st.lists(st.one_of(item, item, item, _junk), max_size=3)
    return _text


@st.composite
def _arguments(draw: st.DrawFn, name: ToolName) -> dict[str, Any]:
    args: dict[str, Any] = {}
    schema = arguments_schema(name)
    for key, spec in schema["properties"].items():
        if draw(st.integers(0, 9)) < (8 if key in schema["required"] else 5):
            args[key] = draw(st.one_of(_values(spec), _values(spec), _values(spec), _junk))
    if draw(st.integers(0, 4)) == 0:  # now and then a field the tool does not have
        args[draw(st.sampled_from(["k", "limit", "doc_id", "query", "ids"]))] = draw(_junk)
    return args


@given(data=st.data(), name=st.sampled_from(TOOL_NAMES))
@settings(max_examples=500, deadline=None)
def test_arguments_are_accepted_exactly_when_the_described_schema_accepts_them(
    data: st.DataObject, name: ToolName
) -> None:
    args = data.draw(_arguments(name))
    described = next(d for d in tool_descriptions() if d.name == name).arguments
    decoded = decode_arguments(name, json.dumps(args))
    accepted = not isinstance(decoded, ErrorResult)
    assert accepted == schema_accepts(described, args), (name, args, decoded)
    if accepted:
        assert isinstance(decoded, arguments_type(name))
    else:
        assert isinstance(decoded, ErrorResult) and decoded.error.code == "invalid_argument"
