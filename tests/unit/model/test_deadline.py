"""The request deadline (issue 24, item 10): the bound an upstream call gets on the cloud path is the
invocation's remaining time or API Gateway's 30 s, whichever is sooner, less the answer's margin;
without a deadline (local serve) nothing is bounded beyond the servers' own timeouts."""

from __future__ import annotations

import asyncio

import pytest

from foldgate.model.deadline import (
    ANSWER_MARGIN_S,
    API_GATEWAY_LIMIT_S,
    answer_ceiling,
    answering_by,
    request_deadline,
    time_left,
)


def test_the_deadline_is_the_remaining_time_less_the_margin() -> None:
    assert request_deadline(10_000, now=100.0) == pytest.approx(100.0 + 10.0 - ANSWER_MARGIN_S)


def test_api_gateways_limit_caps_a_longer_invocation() -> None:
    # A function configured above 30 s still cannot answer through API Gateway later than that.
    assert request_deadline(120_000, now=0.0) == pytest.approx(API_GATEWAY_LIMIT_S - ANSWER_MARGIN_S)


def test_an_invocation_already_out_of_time_leaves_nothing() -> None:
    assert request_deadline(-5, now=50.0) == pytest.approx(50.0 - ANSWER_MARGIN_S)
    with answering_by(request_deadline(500, now=0.0)):
        assert time_left(now=0.0) == 0.0


def test_time_left_counts_down_and_is_none_without_a_deadline() -> None:
    assert time_left() is None
    with answering_by(10.0):
        assert time_left(now=4.0) == pytest.approx(6.0)
        assert time_left(now=12.0) == 0.0
        with answering_by(None):
            assert time_left(now=4.0) is None
        assert time_left(now=4.0) == pytest.approx(6.0)
    assert time_left() is None


async def test_tasks_started_by_the_request_inherit_its_deadline() -> None:
    async def inside() -> float | None:
        return time_left(now=0.0)

    with answering_by(3.0):
        task = asyncio.get_running_loop().create_task(inside())
    assert await task == pytest.approx(3.0)


def test_the_ceiling_of_the_cloud_path() -> None:
    assert answer_ceiling(None) is None
    assert answer_ceiling(29) == pytest.approx(29 - ANSWER_MARGIN_S)
    assert answer_ceiling(900) == pytest.approx(API_GATEWAY_LIMIT_S - ANSWER_MARGIN_S)
    assert answer_ceiling(1) == 0.0
