"""The settings file as a person edits it: what config.toml holds (environment overrides left
out), which settings an environment variable overrides now, and a validated merge of changes
written atomically. Nothing is written unless the whole result is valid."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from engine.config import Config, ConfigError, dump_config, load_config, parse_config
from engine.paths import DataDir
from index.fsutil import atomic_write


def file_settings(path: Path) -> Config:
    """The settings as config.toml has them (environment overrides left out)."""
    return load_config(path, environ={})


def env_overrides(environ: Mapping[str, str] | None = None) -> list[str]:
    """`section.key` of every setting an environment variable currently overrides."""
    environ = os.environ if environ is None else environ
    sections = {f.name for f in msgspec.structs.fields(Config)} - {"format_version"}
    out = []
    for name in environ:
        rest = name[len("CITEWISE_") :].lower() if name.startswith("CITEWISE_") else ""
        section = next((s for s in sections if rest.startswith(s + "_")), None)
        if section is not None:
            out.append(f"{section}.{rest[len(section) + 1 :]}")
    return sorted(out)


def merged_settings(path: Path, changes: Mapping[str, Mapping[str, Any]]) -> Config:
    """config.toml with `changes` ({section: {key: value}}) merged in, validated on its own.

    Raises ConfigError (nothing is written here) with the key, the value and what is allowed."""
    try:
        current: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        current = {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is damaged ({exc}); fix or delete it") from None
    merged = msgspec.to_builtins(parse_config(current, {}))
    for section, values in changes.items():
        if not isinstance(merged.get(section), dict):
            raise ConfigError(f"config has no section {section!r}")
        for key, value in values.items():
            if isinstance(value, Mapping):
                merged[section].setdefault(key, {}).update(value)
            else:
                merged[section][key] = value
    return parse_config(merged, {})  # the file's own values must be valid alone


def write_settings(path: Path, settings: Config) -> None:
    atomic_write(path, dump_config(settings).encode("utf-8"))


def effective_settings(settings: Config) -> Config:
    """`settings` with the environment's overrides applied."""
    return parse_config(msgspec.to_builtins(settings))


def settings_at(home: Path) -> Config:
    """The effective settings of the data directory `home`, read without creating anything."""
    return load_config(DataDir(home).config_file)
