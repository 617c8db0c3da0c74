"""Loopback servers that stand in for outside services in tests (real sockets, no mocks)."""
