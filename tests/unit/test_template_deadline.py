"""template.yaml tells the indexer the serving functions' real timeout (issue 24, item 10): the
FOLDGATE_SERVE_TIMEOUT_S every function gets equals McpFunction's and CodeFunction's Timeout, and
neither exceeds API Gateway's integration limit."""

from __future__ import annotations

from typing import Any

import yaml

from foldgate.config.settings import Settings
from foldgate.dev.bench.moto import TEMPLATE, _CfnLoader, template_resource
from foldgate.model.deadline import API_GATEWAY_LIMIT_S


def _globals() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.load(TEMPLATE.read_text(encoding="utf-8"), Loader=_CfnLoader)
    function: dict[str, Any] = doc["Globals"]["Function"]
    return function


def test_the_serving_timeout_setting_is_the_serving_functions_timeout() -> None:
    env = _globals()["Environment"]["Variables"]
    setting = Settings.from_env({"FOLDGATE_SERVE_TIMEOUT_S": env["FOLDGATE_SERVE_TIMEOUT_S"]})
    for name in ("McpFunction", "CodeFunction"):
        props = template_resource(name)["Properties"]
        timeout = props.get("Timeout", _globals()["Timeout"])
        assert setting.serve_timeout_s == timeout, name
        assert timeout < API_GATEWAY_LIMIT_S, name
        assert "FOLDGATE_SERVE_TIMEOUT_S" not in props["Environment"]["Variables"]
