"""Ctrl-C inside ``ctrl_c_interrupts`` ends the work as :class:`Interrupted`, however
Python wraps the signal's raise on its way out."""

from __future__ import annotations

import os
import signal

import pytest

from torchscan_tui.cli.open_progress import Interrupted, ctrl_c_interrupts


class _SignalledField:
    """A descriptor whose ``__set_name__`` takes a real SIGINT, as a dataclass field of a
    module imported mid-read did in CI."""

    def __set_name__(self, owner: type, name: str) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # the handler runs between bytecodes, here
            pass


def test_a_sigint_while_a_class_is_made_ends_as_interrupted():
    with pytest.raises(Interrupted), ctrl_c_interrupts():
        type("Made", (), {"field": _SignalledField()})


def test_an_error_of_its_own_is_not_taken_for_ctrl_c():
    with pytest.raises(RuntimeError, match="ours"), ctrl_c_interrupts():
        raise RuntimeError("ours")


def test_the_previous_sigint_handler_is_back_after_it():
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(Interrupted), ctrl_c_interrupts():
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):
            pass
    assert signal.getsignal(signal.SIGINT) is before
