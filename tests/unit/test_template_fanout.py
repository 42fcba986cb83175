"""template.yaml's fan-out indexing and scale limits (issue 30, items 1 and 5): the schedules reach only
IndexScheduleFunction, the only role that may send to IndexQueue; IndexerFunction consumes it through an
event source mapping with partial batch responses, reading that queue only; the queue's visibility
timeout is at least six times the consumer's timeout and its redrive moves a tenant to the DLQ after
IndexMaxReceiveCount deliveries (the count the consumer is told); reserved concurrency is a parameter
for each function (0 = unreserved); the HttpApi throttles every route; alarms watch the DLQ's depth and
the functions' throttles."""

from __future__ import annotations

from typing import Any

import yaml

from foldgate.config.settings import Settings
from foldgate.dev.bench.moto import TEMPLATE, _CfnLoader


def _doc() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.load(TEMPLATE.read_text(encoding="utf-8"), Loader=_CfnLoader)
    return doc


def _resources() -> dict[str, Any]:
    resources: dict[str, Any] = _doc()["Resources"]
    return resources


def _statements(function: str) -> list[dict[str, Any]]:
    """Every policy statement of a function's role (both branches of a conditional policy)."""
    out: list[dict[str, Any]] = []
    for policy in _resources()[function]["Properties"].get("Policies", []):
        if isinstance(policy, dict) and "Statement" in policy:
            out.extend(policy["Statement"])
        elif isinstance(policy, list):  # !If [cond, {Statement: ...}, NoValue]
            out.extend(
                s for branch in policy[1:] if isinstance(branch, dict) for s in branch.get("Statement", [])
            )
    return out


def _actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else list(action)


def _functions() -> list[str]:
    return [n for n, r in _resources().items() if r["Type"] == "AWS::Serverless::Function"]


def test_the_schedules_reach_only_the_schedule_function() -> None:
    for name in _functions():
        events = _resources()[name]["Properties"].get("Events", {})
        kinds = {e["Type"] for e in events.values()}
        if name == "IndexScheduleFunction":
            assert events["Schedule"]["Properties"]["Schedule"] == "ScheduleExpression"
            assert events["Freshness"]["Properties"]["Schedule"] == "FreshnessSchedule"
            assert events["Freshness"]["Properties"]["Input"] == '{"action": "freshness"}'
        else:
            assert "Schedule" not in kinds, name
            assert "SQS" not in kinds, name  # SAM's SQS event attaches a policy for every queue


def test_only_the_schedule_function_may_send_and_it_holds_nothing_else_of_value() -> None:
    for name in _functions():
        sends = [s for s in _statements(name) if any(a.startswith("sqs:Send") for a in _actions(s))]
        if name == "IndexScheduleFunction":
            [send] = sends
            assert _actions(send) == ["sqs:SendMessage", "sqs:GetQueueAttributes"]
            assert send["Resource"] == "IndexQueue.Arn"
        else:
            assert sends == [], name
    statements = _statements("IndexScheduleFunction")
    schedule = [a for s in statements for a in _actions(s)]
    assert sorted(schedule) == [
        "dynamodb:Query",
        "sqs:GetQueueAttributes",
        "sqs:SendMessage",
        "ssm:DescribeParameters",
    ]
    # Its one table right reads the tenant registry's partition, nothing else.
    [registry] = [s for s in statements if _actions(s) == ["dynamodb:Query"]]
    assert registry["Condition"] == {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": ["TENANTS"]}}
    env = _resources()["IndexScheduleFunction"]["Properties"]["Environment"]["Variables"]
    assert env["FOLDGATE_INDEX_QUEUE_URL"] == "IndexQueue"


def test_the_indexer_consumes_the_queue_with_partial_batch_responses_reading_only_it() -> None:
    [mapping] = [r for r in _resources().values() if r["Type"] == "AWS::Lambda::EventSourceMapping"]
    props = mapping["Properties"]
    assert props["EventSourceArn"] == "IndexQueue.Arn"
    assert props["FunctionName"] == "IndexerFunction"
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert props["BatchSize"] == "IndexBatchSize"
    assert props["MaximumBatchingWindowInSeconds"] == "IndexBatchWindowSeconds"
    assert props["ScalingConfig"]["MaximumConcurrency"] == "IndexQueueConcurrency"
    params = _doc()["Parameters"]
    # Without a batching window SQS hands at most 10 messages to a function.
    assert params["IndexBatchSize"]["MaxValue"] <= 10
    receivers = {
        name: s
        for name in _functions()
        for s in _statements(name)
        if any(a.startswith("sqs:Receive") for a in _actions(s))
    }
    assert list(receivers) == ["IndexerFunction"]
    assert receivers["IndexerFunction"]["Resource"] == "IndexQueue.Arn"
    assert sorted(_actions(receivers["IndexerFunction"])) == [
        "sqs:ChangeMessageVisibility",
        "sqs:DeleteMessage",
        "sqs:GetQueueAttributes",
        "sqs:ReceiveMessage",
    ]


def test_the_visibility_timeout_is_six_consumer_timeouts_and_the_redrive_count_is_the_consumers() -> None:
    queue = _resources()["IndexQueue"]["Properties"]
    indexer = _resources()["IndexerFunction"]["Properties"]
    assert queue["VisibilityTimeout"] >= 6 * indexer["Timeout"]
    redrive = queue["RedrivePolicy"]
    assert redrive["deadLetterTargetArn"] == "IndexDeadLetterQueue.Arn"
    assert redrive["maxReceiveCount"] == "IndexMaxReceiveCount"
    assert indexer["Environment"]["Variables"]["FOLDGATE_INDEX_MAX_RECEIVES"] == "IndexMaxReceiveCount"
    default = _doc()["Parameters"]["IndexMaxReceiveCount"]["Default"]
    assert Settings.from_env({"FOLDGATE_INDEX_MAX_RECEIVES": str(default)}).index_max_receives == default
    # The DLQ keeps a tenant longer than the queue does (an operator has two weeks to look).
    dlq = _resources()["IndexDeadLetterQueue"]["Properties"]
    assert dlq["MessageRetentionPeriod"] > queue["MessageRetentionPeriod"]


def test_reserved_concurrency_is_a_parameter_zero_meaning_unreserved() -> None:
    conditions = _doc()["Conditions"]
    for function, param, condition in (
        ("McpFunction", "McpReservedConcurrency", "HasMcpReservedConcurrency"),
        ("IndexerFunction", "IndexerReservedConcurrency", "HasIndexerReservedConcurrency"),
    ):
        assert _doc()["Parameters"][param]["Default"] == 0
        assert conditions[condition] == [[param, "0"]]
        reserved = _resources()[function]["Properties"]["ReservedConcurrentExecutions"]
        assert reserved == [condition, param, "AWS::NoValue"]


def test_the_http_api_throttles_every_route() -> None:
    settings = _resources()["HttpApi"]["Properties"]["DefaultRouteSettings"]
    assert settings == {
        "ThrottlingRateLimit": "ApiThrottlingRateLimit",
        "ThrottlingBurstLimit": "ApiThrottlingBurstLimit",
    }
    description = _doc()["Parameters"]["RateLimitPerMinute"]["Description"]
    assert "HttpApi throttling" in description
    assert "ApiThrottlingRateLimit" in description


def test_alarms_watch_the_dead_letter_queue_and_throttles() -> None:
    alarms = {n: r["Properties"] for n, r in _resources().items() if r["Type"] == "AWS::CloudWatch::Alarm"}
    dlq = alarms["IndexDeadLetterAlarm"]
    assert (dlq["Namespace"], dlq["MetricName"]) == ("AWS/SQS", "ApproximateNumberOfMessagesVisible")
    assert dlq["Dimensions"] == [{"Name": "QueueName", "Value": "IndexDeadLetterQueue.QueueName"}]
    assert (dlq["ComparisonOperator"], dlq["Threshold"]) == ("GreaterThanThreshold", 0)
    throttled = {
        a["Dimensions"][0]["Value"]
        for a in alarms.values()
        if (a["Namespace"], a["MetricName"]) == ("AWS/Lambda", "Throttles")
    }
    assert throttled == {"IndexerFunction", "McpFunction"}
    for alarm in alarms.values():
        assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
        assert alarm["Threshold"] == 0
        assert alarm["TreatMissingData"] == "notBreaching"
