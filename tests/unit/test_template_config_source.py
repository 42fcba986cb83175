"""template.yaml's ConfigSource parameter: every value it allows is a config source the functions
accept, the functions get it as FOLDGATE_CONFIG_SOURCE, and new stacks default to the table (the
storage that holds 10,000 tenants; docs/scale.md)."""

from __future__ import annotations

from typing import Any

import yaml

from foldgate.config.settings import Settings
from foldgate.dev.bench.moto import TEMPLATE, _CfnLoader


def _doc() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.load(TEMPLATE.read_text(encoding="utf-8"), Loader=_CfnLoader)
    return doc


def test_every_allowed_config_source_is_one_the_functions_accept() -> None:
    param = _doc()["Parameters"]["ConfigSource"]
    assert param["Default"] == "table"
    for value in param["AllowedValues"]:
        assert Settings.from_env({"FOLDGATE_CONFIG_SOURCE": value}).secrets_in_ssm


def test_the_functions_read_configs_from_the_chosen_source() -> None:
    env = _doc()["Globals"]["Function"]["Environment"]["Variables"]
    assert env["FOLDGATE_CONFIG_SOURCE"] == "ConfigSource"  # the loader reads !Ref X as "X"
