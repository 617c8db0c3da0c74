"""Settings: `config.toml` in the data directory, overridden by CITEWISE_<SECTION>_<KEY>.

Decoded by msgspec into frozen Structs; an invalid value is rejected with the key, the value
and what is allowed. Secrets are never settings: the two API-key variables are reserved.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

# Still imported from here by actors/app.py, actors/settings.py and cli/upgrade.py.
from engine.errors import ConfigError as ConfigError

CONFIG_FORMAT: Literal[1] = 1
RESERVED_ENV = frozenset(
    {"CITEWISE_DEEPSEEK_API_KEY", "CITEWISE_EMBEDDING_API_KEY", "CITEWISE_HOME"}
)

# Upper bounds keep every value finite and within what timers, dates and SQLite can hold:
# `inf` or 2**70 would pass a bare lower bound and then fail far from the setting that caused it.
PositiveInt = Annotated[int, msgspec.Meta(gt=0, le=1_000_000_000)]
NonNegInt = Annotated[int, msgspec.Meta(ge=0, le=1_000_000_000)]
NonNegFloat = Annotated[float, msgspec.Meta(ge=0, le=1e12)]
Seconds = Annotated[float, msgspec.Meta(gt=0, le=86_400)]
Days = Annotated[int, msgspec.Meta(ge=0, le=36_500)]
Megabytes = Annotated[int, msgspec.Meta(gt=0, le=1_000_000)]
Url = Annotated[str, msgspec.Meta(pattern=r"^https?://[^\s]+$")]


class Price(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Per million tokens, in `currency`."""

    input_cache_hit: NonNegFloat = 0.028
    input_cache_miss: NonNegFloat = 0.28
    output: NonNegFloat = 0.42
    currency: str = "USD"


class ChatSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    base_url: Url = "https://api.deepseek.com"
    model: Annotated[str, msgspec.Meta(min_length=1)] = "deepseek-chat"
    timeout_s: Seconds = 120.0
    max_output_tokens: PositiveInt = 4000
    temperature: Annotated[float, msgspec.Meta(ge=0, le=2)] = 0.0
    price: Price = Price()
    daily_cap: NonNegFloat = 0.0  # 0 = no cap
    monthly_cap: NonNegFloat = 0.0


class EmbeddingSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    provider: Literal["local", "openai_compatible"] = "local"
    base_url: Url = "https://api.openai.com/v1"
    model: Annotated[str, msgspec.Meta(min_length=1)] = "text-embedding-3-small"
    dimensions: PositiveInt = 1536
    batch_size: Annotated[int, msgspec.Meta(gt=0, le=2048)] = 64
    concurrency: Annotated[int, msgspec.Meta(gt=0, le=32)] = 2
    timeout_s: Seconds = 60.0
    # What is embedded per block: "auto" is sentence windows for the built-in sentence
    # encoder (it averages a long block into mush) and one vector per block for remote models.
    granularity: Literal["auto", "block", "sentence"] = "auto"


class BudgetSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    max_context_tokens: Annotated[int, msgspec.Meta(ge=1000, le=100_000_000)] = 100_000
    max_request_tokens: Annotated[int, msgspec.Meta(ge=1000, le=1_000_000_000)] = 400_000
    finalization_reserve_tokens: Annotated[int, msgspec.Meta(ge=100, le=100_000_000)] = 4_000
    max_tool_calls: Annotated[int, msgspec.Meta(ge=0, le=100)] = 8


# search_blocks refuses a longer query (invalid_argument): a question's worth of words
# searches in milliseconds, a pasted 200 KB text took 8 s and is no query.
DEFAULT_MAX_QUERY_CHARS = 4_000


class RetrievalSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    bm25_k1: Annotated[float, msgspec.Meta(ge=0, le=10)] = 1.2
    bm25_b: Annotated[float, msgspec.Meta(ge=0, le=1)] = 0.75
    rrf_k: PositiveInt = 60
    top_k: Annotated[int, msgspec.Meta(gt=0, le=50)] = 5
    min_similarity: Annotated[float, msgspec.Meta(ge=-1, le=1)] = 0.2
    # Measured (bench vector_threshold): exact p50 2 ms at 25k vectors, 11 ms at 50k; HNSW ~0.15 ms.
    exact_search_max_blocks: NonNegInt = 30_000
    max_query_chars: Annotated[int, msgspec.Meta(ge=16, le=1_000_000)] = DEFAULT_MAX_QUERY_CHARS


class IngestSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    block_target_tokens: Annotated[int, msgspec.Meta(ge=32, le=4000)] = 256
    max_file_megabytes: Megabytes = 512
    max_archive_megabytes: Megabytes = 256  # inflated DOCX/EPUB limit
    parse_workers: Annotated[int, msgspec.Meta(gt=0, le=16)] = 2
    # Scanned PDF pages recognised offline (engine/parsing/ocr.py); off: a scan fails with
    # no_text_layer. Pages past the limit in one document are left out, with a warning.
    ocr: bool = True
    ocr_max_pages: Annotated[int, msgspec.Meta(gt=0, le=20_000)] = 500


class TraceSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    mode: Literal["metadata", "full"] = "metadata"
    retention_days: Days = 30
    max_megabytes: Megabytes = 500


class SnapshotSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    keep_last: Annotated[int, msgspec.Meta(ge=1, le=100_000)] = 5
    keep_days: Days = 0  # 0 = age does not protect a snapshot


class NetworkSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    proxy: str = ""  # empty = use HTTPS_PROXY & co. from the environment
    ca_bundle: str = ""  # path to a PEM file; empty = system default


class UiSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    language: Literal["zh", "en"] = "en"


class UpdateSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    # Asked only when the person checks for updates; empty = never ask the network.
    feed_url: Annotated[str, msgspec.Meta(pattern=r"^(https?://[^\s]+)?$")] = ""


class Config(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    format_version: Literal[1] = CONFIG_FORMAT
    chat: ChatSettings = ChatSettings()
    embedding: EmbeddingSettings = EmbeddingSettings()
    budget: BudgetSettings = BudgetSettings()
    retrieval: RetrievalSettings = RetrievalSettings()
    ingest: IngestSettings = IngestSettings()
    trace: TraceSettings = TraceSettings()
    snapshots: SnapshotSettings = SnapshotSettings()
    network: NetworkSettings = NetworkSettings()
    ui: UiSettings = UiSettings()
    updates: UpdateSettings = UpdateSettings()

    def __post_init__(self) -> None:
        # Budgets that contradict each other would make every request fail before it starts.
        b, out = self.budget, self.chat.max_output_tokens
        rules = [
            (
                b.max_context_tokens <= b.max_request_tokens,
                f"budget.max_context_tokens = {b.max_context_tokens} must not exceed "
                f"budget.max_request_tokens = {b.max_request_tokens}",
            ),
            (
                b.finalization_reserve_tokens < b.max_request_tokens,
                f"budget.finalization_reserve_tokens = {b.finalization_reserve_tokens} must be "
                f"less than budget.max_request_tokens = {b.max_request_tokens}",
            ),
            (
                out < b.max_context_tokens,
                f"chat.max_output_tokens = {out} must be less than "
                f"budget.max_context_tokens = {b.max_context_tokens}",
            ),
        ]
        for ok, message in rules:
            if not ok:
                raise ValueError(message)


_SECTIONS: dict[str, type[msgspec.Struct]] = {
    f.name: f.type for f in msgspec.structs.fields(Config) if f.name != "format_version"
}


def _env_overrides(environ: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """CITEWISE_<SECTION>_<KEY> → {section: {key: raw string}}; unknown names are refused."""
    out: dict[str, dict[str, str]] = {}
    for name, value in environ.items():
        if not name.startswith("CITEWISE_") or name in RESERVED_ENV:
            continue
        rest = name[len("CITEWISE_") :].lower()
        section = next((s for s in _SECTIONS if rest.startswith(s + "_")), None)
        if section is None:
            continue  # other CITEWISE_ variables (e.g. CITEWISE_TEST_*) are not settings
        key = rest[len(section) + 1 :]
        fields = {f.name for f in msgspec.structs.fields(_SECTIONS[section])}
        if key not in fields:
            raise ConfigError(
                f"environment variable {name}: [{section}] has no key {key!r}; "
                f"allowed keys: {', '.join(sorted(fields))}"
            )
        out.setdefault(section, {})[key] = value
    return out


def _describe(section_type: type[msgspec.Struct], key: str) -> str:
    """What values a key allows, from its type annotation."""
    for f in msgspec.structs.fields(section_type):
        if f.name == key:
            return _describe_type(f.type)
    return "a known key"


def _describe_type(tp: Any) -> str:
    info = msgspec.inspect.type_info(tp)
    if isinstance(info, msgspec.inspect.LiteralType):
        return "one of " + ", ".join(repr(v) for v in info.values)
    bounds = []
    for attr, sym in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")):
        v = getattr(info, attr, None)
        if v is not None:
            bounds.append(f"{sym} {v}")
    if isinstance(info, msgspec.inspect.StrType) and info.min_length:
        bounds.append("not empty")
    kind = {
        msgspec.inspect.IntType: "an integer",
        msgspec.inspect.FloatType: "a number",
        msgspec.inspect.StrType: "text",
        msgspec.inspect.BoolType: "true or false",
    }.get(type(info), "a value of the right type")
    if isinstance(info, msgspec.inspect.StrType) and info.pattern:
        kind = "a URL starting with http:// or https://" if "https?" in info.pattern else kind
    return kind + (" " + " and ".join(bounds) if bounds else "")


_PATH = re.compile(r"at `\$\.([\w.]+)`")


def _lookup(data: Mapping[str, Any], parts: list[str]) -> Any:
    value: Any = data
    for part in parts:
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def parse_config(data: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> Config:
    """Validate TOML data plus environment overrides into a Config."""
    _check_format_version(data.get("format_version", CONFIG_FORMAT))
    merged: dict[str, Any] = {
        k: (dict(v) if isinstance(v, Mapping) else v) for k, v in data.items()
    }
    for section, values in _env_overrides(os.environ if environ is None else environ).items():
        target = merged.setdefault(section, {})
        if not isinstance(target, dict):
            raise ConfigError(f"[{section}] must be a table, not {target!r}")
        target.update(values)
    try:
        # strict=False lets environment strings become ints, floats and booleans.
        return msgspec.convert(merged, Config, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(_explain(exc, merged)) from None


def _check_format_version(found: object) -> None:
    """An older file needs `citewise upgrade`; a newer one came from a newer Citewise."""
    if found == CONFIG_FORMAT or not isinstance(found, int) or isinstance(found, bool):
        return  # a wrong type is explained with the other validation errors
    if found < CONFIG_FORMAT:
        raise ConfigError(
            f"config.toml has format_version = {found}, older than this version of Citewise "
            f"reads ({CONFIG_FORMAT}); run `citewise upgrade` to convert it (a copy is kept)"
        )
    raise ConfigError(
        f"config.toml has format_version = {found}, written by a newer Citewise (this version "
        f"reads {CONFIG_FORMAT}); use that version, or restore a backup with "
        "`citewise backup list` and `citewise backup restore ID`"
    )


def _explain(exc: msgspec.ValidationError, data: Mapping[str, Any]) -> str:
    text = str(exc)
    m = _PATH.search(text)
    if not m:
        unknown = re.search(r"unknown field `(\w+)`", text)
        if unknown:
            return (
                f"config has no section or key {unknown.group(1)!r}; "
                f"sections: format_version, {', '.join(_SECTIONS)}"
            )
        return text.removeprefix("Invalid value: ") if "must" in text else f"invalid config: {text}"
    parts = m.group(1).split(".")
    section = parts[0]
    key = parts[-1] if len(parts) > 1 else None
    if section == "format_version":
        return (
            f"format_version = {data.get('format_version')!r} is not supported; "
            f"this version of Citewise reads format_version = {CONFIG_FORMAT}"
        )
    if section not in _SECTIONS:
        return f"invalid config: {text}"
    unknown = re.search(r"unknown field `(\w+)`", text)
    if unknown:
        fields = sorted(f.name for f in msgspec.structs.fields(_SECTIONS[section]))
        return f"[{section}] has no key {unknown.group(1)!r}; allowed keys: {', '.join(fields)}"
    if key is None:
        return f"[{section}] must be a table of settings"
    owner: type[msgspec.Struct] = _SECTIONS[section]
    for part in parts[1:-1]:
        owner = next(f.type for f in msgspec.structs.fields(owner) if f.name == part)
    dotted = ".".join(parts)
    where = (
        "config.toml"
        if len(parts) > 2
        else f"config.toml or CITEWISE_{section.upper()}_{key.upper()}"
    )
    return (
        f"{dotted} = {_lookup(data, parts)!r} is not allowed: expected "
        f"{_describe(owner, key)} (set in {where})"
    )


def load_config(path: Path, environ: Mapping[str, str] | None = None) -> Config:
    """Read `config.toml` (missing file = defaults) and apply the environment."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raw = ""
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text; save it as UTF-8") from None
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    return parse_config(data, environ)


def dump_config(config: Config) -> str:
    """TOML text for a Config (written by the settings page and `citewise config`)."""
    lines = [f"format_version = {config.format_version}"]
    for section in _SECTIONS:
        value = getattr(config, section)
        lines.append(f"\n[{section}]")
        nested: list[tuple[str, msgspec.Struct]] = []
        for f in msgspec.structs.fields(value):
            v = getattr(value, f.name)
            if isinstance(v, msgspec.Struct):
                nested.append((f.name, v))
            else:
                lines.append(f"{f.name} = {_toml_value(v)}")
        for name, sub in nested:
            lines.append(f"\n[{section}.{name}]")
            for f in msgspec.structs.fields(sub):
                lines.append(f"{f.name} = {_toml_value(getattr(sub, f.name))}")
    return "\n".join(lines) + "\n"


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    return msgspec.json.encode(str(v)).decode()
