"""The request timeout a fault test gives its client."""

from __future__ import annotations

from tests.servers import chat_server, embedding_server

# Overrun by a scripted Delay(3.0); short enough to keep such tests quick.
DELAY_TIMEOUT_S = 1.0
# Met by every other scripted reply, however busy the machine: with 0.2-0.3 s for every fault,
# a 429 reply that took longer on a busy 2-core CI run was classified as a timeout.
REPLY_TIMEOUT_S = 5.0


def timeout_for(fault: object) -> float:
    """DELAY_TIMEOUT_S where the scripted fault is a delay, else REPLY_TIMEOUT_S."""
    delays = (chat_server.Delay, embedding_server.Delay)
    return DELAY_TIMEOUT_S if isinstance(fault, delays) else REPLY_TIMEOUT_S
