"""template.yaml offers streamed responses as an option (issue 28, item 3): ``StreamingMode:
function-url`` adds a function URL in RESPONSE_STREAM invoke mode to McpFunction, served through the
Lambda Web Adapter layer (whose wrapper runs run.sh, which starts foldgate.app.mcp_stream on the
adapter's port); the default (``none``) deploys exactly the Mangum handler behind the HttpApi, whose
routes stay on McpFunction either way."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from foldgate.app.mcp_stream import PORT
from foldgate.dev.bench.moto import TEMPLATE, _CfnLoader, template_resource

COND = "StreamOverFunctionUrl"
RUN_SH = Path(TEMPLATE).parent / "functions" / "mcp" / "run.sh"


def _doc() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.load(TEMPLATE.read_text(encoding="utf-8"), Loader=_CfnLoader)
    return doc


def test_streaming_is_an_option_off_by_default() -> None:
    doc = _doc()
    param = doc["Parameters"]["StreamingMode"]
    assert param["Default"] == "none"
    assert param["AllowedValues"] == ["none", "function-url"]
    assert doc["Conditions"][COND] == ["StreamingMode", "function-url"]


def test_the_function_url_streams_to_mcp_function_and_foldgate_authenticates() -> None:
    url = template_resource("McpFunctionUrl")
    assert url["Type"] == "AWS::Lambda::Url"
    assert url["Condition"] == COND
    assert url["Properties"] == {
        "TargetFunctionArn": "McpFunction.Arn",
        "AuthType": "NONE",
        "InvokeMode": "RESPONSE_STREAM",
    }
    permission = template_resource("McpFunctionUrlPermission")
    assert permission["Condition"] == COND
    assert permission["Properties"]["Action"] == "lambda:InvokeFunctionUrl"
    assert permission["Properties"]["FunctionUrlAuthType"] == "NONE"
    assert _doc()["Outputs"]["StreamingUrl"]["Condition"] == COND


def test_mcp_function_runs_behind_the_web_adapter_only_when_streaming() -> None:
    props = template_resource("McpFunction")["Properties"]
    assert props["Handler"] == [COND, "run.sh", "app.handler"]
    (layer,) = props["Layers"]
    assert layer[0] == COND
    assert ":753240598075:layer:LambdaAdapterLayerArm64:" in layer[1]
    assert layer[2] == "AWS::NoValue"
    # The adapter's arm64 build for the arm64 functions.
    assert _doc()["Globals"]["Function"]["Architectures"] == ["arm64"]
    env = props["Environment"]["Variables"]
    assert env["AWS_LAMBDA_EXEC_WRAPPER"] == [COND, "/opt/bootstrap", "AWS::NoValue"]
    assert env["AWS_LWA_INVOKE_MODE"] == [COND, "response_stream", "AWS::NoValue"]
    assert env["AWS_LWA_PORT"] == [COND, str(PORT), "AWS::NoValue"]
    assert env["AWS_LWA_READINESS_CHECK_PATH"] == [COND, "/healthz", "AWS::NoValue"]


def test_the_httpapi_routes_stay_on_mcp_function() -> None:
    events = template_resource("McpFunction")["Properties"]["Events"]
    assert events
    assert all(e["Type"] == "HttpApi" for e in events.values())


def test_run_sh_starts_the_streaming_app() -> None:
    text = RUN_SH.read_text(encoding="utf-8")
    assert "exec python -m foldgate.app.mcp_stream" in text
    assert os.access(RUN_SH, os.X_OK)
