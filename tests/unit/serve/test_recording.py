"""The observation a request is recorded through: one event at most, only for work, never raising,
the first layer to say how a request ended wins, and a code run's cut-off call is a deadline."""

from __future__ import annotations

import asyncio

import pytest

from foldgate.errors import (
    InvalidRequestError,
    ToolChangedError,
    UpstreamAuthorizationError,
    UpstreamDeadlineError,
)
from foldgate.model.activity import ActivityRecord
from foldgate.serve.recording import (
    Observation,
    approx_chars,
    current,
    observing,
    observing_call,
    outcome_of_error,
    result_chars,
    upstream_timer,
)
from foldgate.serve.results import error_result
from tests.recorders import ListRecorder


def test_an_observation_emits_once_and_only_for_work() -> None:
    recorder = ListRecorder()
    listing = Observation(recorder, "t", "mcp")
    listing.emit()  # tools/list, initialize, ...: no method noted
    assert recorder.events == []
    call = Observation(recorder, "t", "mcp", principal="tok1", request_id="r1")
    call.work("tools/call", "crm__find")
    call.ended("ok")
    call.emit()
    call.emit()
    event = recorder.only_call()
    assert (event.tenant, event.principal, event.request_id, event.tool, event.outcome) == (
        "t", "tok1", "r1", "crm__find", "ok",
    )  # fmt: skip


def test_a_suppressed_request_and_an_unfinished_one() -> None:
    recorder = ListRecorder()
    run = Observation(recorder, "t", "mcp/code")
    run.work("tools/call", "code_execution")
    run.suppress()
    run.emit()
    assert recorder.events == []
    broken = Observation(recorder, "t", "mcp")
    broken.work("prompts/get", "p")
    broken.emit()
    assert recorder.only_call().outcome == "internal_error"


def test_a_failing_recorder_never_fails_the_request(caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        def record(self, event: ActivityRecord) -> None:
            raise RuntimeError("store down")

    observation = Observation(Broken(), "t", "mcp")
    observation.work("tools/call", "x")
    observation.emit()  # no exception
    assert "the activity recorder failed" in caplog.text


def test_the_first_layer_to_say_how_it_ended_wins_and_gateway_results_are_classified() -> None:
    observation = Observation(ListRecorder(), "t", "mcp")
    observation.ended("tool_error")
    observation.answered(error_result(InvalidRequestError("x")))
    assert observation.outcome == "tool_error"
    fresh = Observation(ListRecorder(), "t", "mcp")
    fresh.answered(error_result(ToolChangedError("changed")))
    assert (fresh.outcome, fresh.detail) == ("held", "tool_changed")
    plain = Observation(ListRecorder(), "t", "mcp")
    plain.answered({"content": [{"type": "text", "text": "not json"}], "isError": True})
    assert plain.outcome == "internal_error"  # only the call path may say tool_error
    assert outcome_of_error(UpstreamDeadlineError("late")) == "deadline"
    assert outcome_of_error(KeyError("x")) == "internal_error"
    # The IdP refused this person a token (id_jag, token_exchange): its policy, a denial.
    refused = Observation(ListRecorder(), "t", "mcp")
    refused.answered(error_result(UpstreamAuthorizationError("files: the enterprise IdP refused")))
    assert (refused.outcome, refused.detail) == ("denied", "upstream_needs_authorization")
    assert outcome_of_error(UpstreamAuthorizationError("x")) == "denied"


def test_names_and_details_from_callers_are_cut_short() -> None:
    observation = Observation(ListRecorder(), "t", "mcp")
    observation.work("tools/call", "n" * 10_000)
    observation.ended("not_found", "d" * 10_000)
    assert len(observation.tool) == 200
    assert len(observation.detail) == 200


async def test_upstream_time_is_summed_over_the_requests_upstream_requests() -> None:
    observation = Observation(ListRecorder(), "t", "mcp")
    with upstream_timer():
        pass  # outside an observation: nothing to add to
    with observing(observation):
        for _ in range(2):
            with upstream_timer():
                await asyncio.sleep(0)
    assert observation.upstream_ms is not None
    assert observation.upstream_ms >= 0
    assert current() is None


async def test_a_code_runs_call_cut_off_by_its_end_is_a_deadline_event() -> None:
    recorder = ListRecorder()
    run = Observation(recorder, "t", "mcp/code", principal="p", request_id="r")
    run.suppress()
    started = asyncio.Event()

    async def call() -> None:
        with observing_call() as part:
            assert part is not None
            part.work("tools/call", "crm:slow")
            started.set()
            await asyncio.Event().wait()

    with observing(run):
        task = asyncio.create_task(call())
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    event = recorder.only_call()
    assert (event.outcome, event.tool, event.principal, event.request_id) == (
        "deadline",
        "crm:slow",
        "p",
        "r",
    )


def test_sizes_are_cheap_estimates_bounded_in_work() -> None:
    assert result_chars({"content": [{"type": "text", "text": "abc"}, {"type": "image"}]}) == 3
    assert result_chars("not a result") == 0
    small = approx_chars({"query": "ada"})
    assert 10 <= small <= 20
    # A million values: a few hundred visited, the separators counted from the length alone.
    huge = approx_chars([{"k": "v" * 10}] * 1_000_000)
    assert 1_000_000 < huge < 1_010_000
