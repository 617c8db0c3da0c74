"""API keys: the OS credential store first, then the two reserved environment variables.

Keys are never written to config, logs, traces or bundles. Where no credential store exists
(headless Linux), `keyring_available()` says so and the environment is the only source.
"""

from __future__ import annotations

import os
from typing import Literal

import keyring
import keyring.errors

SERVICE = "citewise"
KeyName = Literal["deepseek", "embedding"]
ENV_NAMES: dict[KeyName, str] = {
    "deepseek": "CITEWISE_DEEPSEEK_API_KEY",
    "embedding": "CITEWISE_EMBEDDING_API_KEY",
}


class SecretStoreUnavailable(Exception):
    """No OS credential store; the message says which environment variable to use instead."""


def keyring_available() -> bool:
    try:
        backend = keyring.get_keyring()
    except keyring.errors.KeyringError:
        return False
    priority = getattr(backend, "priority", 0)
    return bool(priority and priority > 0)


def get_key(name: KeyName) -> str | None:
    """The stored key, or the environment variable when the store has none."""
    try:
        value = keyring.get_password(SERVICE, name)
    except keyring.errors.KeyringError:
        value = None
    if value:
        return value
    return os.environ.get(ENV_NAMES[name]) or None


def set_key(name: KeyName, value: str) -> None:
    try:
        keyring.set_password(SERVICE, name, value)
    except keyring.errors.KeyringError:
        raise SecretStoreUnavailable(
            "this system has no credential store for Citewise to keep the key in; set the "
            f"environment variable {ENV_NAMES[name]} instead"
        ) from None


def mask(value: str | None) -> str:
    """A key as it may be shown back: never in full."""
    if not value:
        return "(not set)"
    return f"…{value[-4:]}" if len(value) > 12 else "(set)"
