"""The channel as tests speak it: messages written as plain dicts (what the wire holds),
and messages read back as plain dicts, so a test compares them with ``==``."""

from __future__ import annotations

import json

import msgspec

from torchscan_tui.run.protocol import InvalidMessage, read_messages


def line(message: dict) -> bytes:
    """One message as the worker puts it on the wire: ``{"type": ..., ...}`` and a newline."""
    return json.dumps(message).encode() + b"\n"


def as_dict(message: object) -> dict:
    """A message read from the channel as the wire's dict (an invalid one as
    ``{"type": "invalid", "problem": ...}``)."""
    if isinstance(message, InvalidMessage):
        return {"type": "invalid", "problem": message.problem}
    tag = type(message).__struct_config__.tag  # type: ignore[attr-defined]
    return {"type": tag, **msgspec.structs.asdict(message)}  # its defaults too


def read_dicts(fd: int, **kwargs) -> list[dict]:
    """Every message on ``fd`` until EOF, as dicts."""
    return [as_dict(message) for message in read_messages(fd, **kwargs)]
