"""template.yaml's Parameter Store reads: the operator key (``{prefix}/secrets/operator-key``) is
readable by AdminFunction's role alone (and the CLI's own credentials, outside the stack), while every
serving role still reads tenant documents, tenant secrets and the token HMAC key.

Every statement of every function's policies is read from the template (both branches of an ``!If``,
SAM policy templates included), so a role or statement added later with a broad ``{prefix}/*``, a bare
``{prefix}`` (``GetParametersByPath`` there reaches every level below) or ``*`` fails here."""

from __future__ import annotations

import fnmatch
from typing import Any

from foldgate.dev.bench.moto import template_resources

PREFIX = "/foldgate"
ACCOUNT = "123456789012"
REGION = "us-east-1"
READS = ("ssm:GetParameter", "ssm:GetParameters", "ssm:GetParametersByPath")
OPERATOR_KEY = f"{PREFIX}/secrets/operator-key"
SERVING = ("McpFunction", "CodeFunction", "TaskWorkerFunction", "IndexerFunction")
# SAM policy templates that grant Parameter Store reads on their ParameterName.
SSM_TEMPLATES = {"SSMParameterReadPolicy", "SSMParameterWithSlashPrefixReadPolicy"}


def _functions() -> dict[str, Any]:
    kinds = ("AWS::Serverless::Function", "AWS::IAM::Role")
    return {n: r for n, r in template_resources().items() if r["Type"] in kinds}


def _branches(policy: Any) -> list[Any]:
    """A policy entry with every ``!If`` opened (both outcomes; ``AWS::NoValue`` dropped)."""
    if isinstance(policy, list) and len(policy) == 3 and isinstance(policy[0], str):
        return [p for branch in policy[1:] for p in _branches(branch)]
    if policy == "AWS::NoValue":
        return []
    return [policy]


def _statements(resource: dict[str, Any]) -> list[dict[str, Any]]:
    policies = resource.get("Properties", {}).get("Policies") or []
    if isinstance(policies, str | dict):
        policies = [policies]
    if resource["Type"] == "AWS::IAM::Role":  # inline policies: {PolicyName, PolicyDocument}
        policies = [p.get("PolicyDocument", {}) for p in policies]
    found: list[dict[str, Any]] = []
    for entry in policies:
        for policy in _branches(entry):
            if isinstance(policy, str):
                continue  # a managed policy name (AWSLambdaBasicExecutionRole...): no SSM reads
            for name, body in policy.items():
                if name == "Statement":
                    found.extend(s for st in body for s in _branches(st))
                elif name in SSM_TEMPLATES:
                    param = body["ParameterName"]
                    found.append({"Effect": "Allow", "Action": list(READS), "Resource": f"parameter/{param}"})
    return found


def _expand(value: Any) -> str:
    text = value if isinstance(value, str) else value[0]  # !Sub [template, vars] keeps its template
    for var, real in (
        ("${AWS::Partition}", "aws"),
        ("${AWS::Region}", REGION),
        ("${AWS::AccountId}", ACCOUNT),
        ("${ConfigPrefix}", PREFIX),
    ):
        text = text.replace(var, real)
    return text


def _arn(name: str) -> str:
    return f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter{name}"


def _allows(statement: dict[str, Any], action: str, arn: str) -> bool:
    if statement.get("Effect") != "Allow":
        return False
    actions = statement["Action"]
    if not any(fnmatch.fnmatchcase(action, a) for a in ([actions] if isinstance(actions, str) else actions)):
        return False
    resources = statement["Resource"]
    for resource in resources if isinstance(resources, list) else [resources]:
        pattern = _expand(resource)
        if pattern == "*" or fnmatch.fnmatchcase(arn, pattern):
            return True
    return False


def _may_read(function: str, name: str) -> bool:
    """Whether the role may read parameter ``name``: directly, or by path from any ancestor."""
    statements = _statements(_functions()[function])
    ancestors = [name[: i or None] for i, c in enumerate(name) if c == "/" and i > 0]
    for statement in statements:
        if any(_allows(statement, a, _arn(name)) for a in ("ssm:GetParameter", "ssm:GetParameters")):
            return True
        if any(_allows(statement, "ssm:GetParametersByPath", _arn(p)) for p in ancestors):
            return True
    return False


def test_only_admin_function_may_read_the_operator_key() -> None:
    readers = {name for name in _functions() if _may_read(name, OPERATOR_KEY)}
    assert readers == {"AdminFunction"}


def test_no_serving_role_reads_the_whole_prefix() -> None:
    """Nothing beside AdminFunction may list the prefix, nor its ``secrets/`` level, by path."""
    for function in _functions():
        if function == "AdminFunction":
            continue
        statements = _statements(_functions()[function])
        for path in (PREFIX, f"{PREFIX}/secrets"):
            listed = any(_allows(s, "ssm:GetParametersByPath", _arn(path)) for s in statements)
            assert not listed, (function, path)


def test_serving_roles_still_read_tenant_documents_secrets_and_the_token_key() -> None:
    for function in SERVING:
        for name in (
            f"{PREFIX}/tenants/acme/config",
            f"{PREFIX}/tenants/acme/servers/github",
            f"{PREFIX}/tenants/acme/secrets/github",
            f"{PREFIX}/secrets/token-hmac-key",
        ):
            assert _may_read(function, name), (function, name)


def test_the_reader_sees_a_broad_grant() -> None:
    """The check itself: the grant main shipped (``{prefix}`` and ``{prefix}/*``) reads the key."""
    broad = {
        "Effect": "Allow",
        "Action": list(READS),
        "Resource": [
            "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter${ConfigPrefix}",
            "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter${ConfigPrefix}/*",
        ],
    }
    assert _allows(broad, "ssm:GetParameter", _arn(OPERATOR_KEY))
    assert _allows(broad, "ssm:GetParametersByPath", _arn(PREFIX))


# Workload identity: the roles that call upstreams may ask STS for a workload JWT, only for the
# stack's audiences and lifetime, and only when an audience is configured.
STS_CALLERS = SERVING
WORKLOAD_STATEMENT = {
    "Sid": "WorkloadIdentityToken",
    "Effect": "Allow",
    "Action": "sts:GetWebIdentityToken",
    "Resource": "*",
    "Condition": {
        "ForAllValues:StringEquals": {"sts:IdentityTokenAudience": [",", "WorkloadTokenAudience"]},
        "NumericLessThanEquals": {"sts:DurationSeconds": "WorkloadTokenMaxSeconds"},
    },
}


def _template() -> dict[str, Any]:
    # The CloudFormation tags read as plain values, as template_resources reads them.
    import yaml

    from foldgate.dev.bench import moto

    doc: dict[str, Any] = yaml.load(moto.TEMPLATE.read_text(encoding="utf-8"), Loader=moto._CfnLoader)
    return doc


def _workload_entries(function: str) -> list[Any]:
    policies = _functions()[function].get("Properties", {}).get("Policies") or []
    return [
        p for p in policies
        if isinstance(p, list) and any(
            s.get("Sid") == "WorkloadIdentityToken" for b in _branches(p) if isinstance(b, dict)
            for s in b.get("Statement", [])
        )
    ]  # fmt: skip


def test_only_the_roles_that_call_upstreams_may_ask_sts_for_a_workload_jwt() -> None:
    askers = {
        name for name in _functions()
        if any(s.get("Action") == "sts:GetWebIdentityToken" or "sts:*" in str(s.get("Action"))
               for s in _statements(_functions()[name]))
    }  # fmt: skip
    assert askers == set(STS_CALLERS)


def test_the_workload_jwt_grant_is_bounded_and_conditional() -> None:
    for function in STS_CALLERS:
        (entry,) = _workload_entries(function)
        condition, granted, otherwise = entry
        assert (condition, otherwise) == ("HasWorkloadTokenAudience", "AWS::NoValue"), function
        assert granted == {"Statement": [WORKLOAD_STATEMENT]}, function


def test_the_workload_parameters_default_to_no_grant() -> None:
    doc = _template()
    audience, seconds = (
        doc["Parameters"]["WorkloadTokenAudience"],
        doc["Parameters"]["WorkloadTokenMaxSeconds"],
    )
    assert (audience["Type"], audience["Default"]) == ("String", "")
    assert (seconds["Default"], seconds["MinValue"], seconds["MaxValue"]) == (300, 60, 3600)
    assert doc["Conditions"]["HasWorkloadTokenAudience"] == [["WorkloadTokenAudience", ""]]
