"""The host's non-dumpable flag is checked, and agent code is refused when it did not take effect."""

from __future__ import annotations

import ctypes
import sys
from typing import Any, cast

import pytest

from foldgate.code import hardening
from foldgate.code.hardening import make_not_dumpable
from foldgate.errors import SandboxUnavailableError
from foldgate.serve.surfaces.call import SearchSurface
from foldgate.serve.surfaces.code import CodeSurface


class FakePrctl:
    """prctl that answers SET with ``set_result`` and GET with ``state``."""

    def __init__(self, set_result: int, state: int) -> None:
        self.set_result, self.state = set_result, state

    def __call__(self, option: int, *args: int) -> int:
        return self.set_result if option == 4 else self.state


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux-only")
def test_the_process_is_non_dumpable_afterwards() -> None:
    make_not_dumpable()
    assert ctypes.CDLL(None).prctl(3, 0, 0, 0, 0) == 0  # PR_GET_DUMPABLE


@pytest.mark.parametrize(
    ("prctl", "why"),
    [
        (FakePrctl(set_result=-1, state=1), "prctl returned -1"),  # refused (EPERM, seccomp...)
        (FakePrctl(set_result=0, state=1), "dumpable is 1"),  # claimed success, no effect
        (None, "this platform"),  # no prctl at all
    ],
)
def test_hardening_that_did_not_take_effect_raises(
    monkeypatch: pytest.MonkeyPatch, prctl: FakePrctl | None, why: str
) -> None:
    monkeypatch.setattr(hardening, "_libc", lambda: prctl)
    with pytest.raises(SandboxUnavailableError, match=why) as info:
        make_not_dumpable()
    assert info.value.code == "sandbox_unavailable"


def test_no_sandbox_starts_when_hardening_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hardening, "_libc", lambda: FakePrctl(set_result=0, state=1))
    started: list[Any] = []
    runner = CodeSurface(lambda: started.append(1) or cast(Any, object()), SearchSurface())
    for _ in range(2):  # refused every time, not only on the first attempt
        with pytest.raises(SandboxUnavailableError):
            runner.sandbox()
    assert started == []
