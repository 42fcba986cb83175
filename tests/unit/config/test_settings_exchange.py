"""``FOLDGATE_EXCHANGE_ISSUERS``: the operator's list of exchange servers a person's inbound token may
go to besides its own issuer (the deployment's choice, never a tenant config's); and the template
passes its ``ExchangeIssuers`` parameter to every function, empty by default."""

from __future__ import annotations

import re
from typing import Any

import pytest

from foldgate.config.settings import Settings
from foldgate.errors import ConfigError


def test_the_list_is_read_comma_separated_from_the_environment() -> None:
    env = {"FOLDGATE_EXCHANGE_ISSUERS": " https://idp.example.com , https://login.example.com/oauth2/token,"}
    assert Settings.from_env(env).exchange_issuers == [
        "https://idp.example.com",
        "https://login.example.com/oauth2/token",
    ]
    assert Settings.from_env({}).exchange_issuers == []


@pytest.mark.parametrize("bad", ["idp.example.com", "ftp://idp.example.com", "https://idp.example.com/?a=1"])
def test_anything_but_an_http_url_is_refused(bad: str) -> None:
    with pytest.raises(ConfigError, match="exchange_issuers"):
        Settings.from_env({"FOLDGATE_EXCHANGE_ISSUERS": bad})


def _template() -> dict[str, Any]:
    # The CloudFormation tags read as plain values, as template_resources reads them.
    import yaml

    from foldgate.dev.bench import moto

    doc: dict[str, Any] = yaml.load(moto.TEMPLATE.read_text(encoding="utf-8"), Loader=moto._CfnLoader)
    return doc


def test_the_template_passes_the_operators_list_empty_by_default() -> None:
    doc = _template()
    parameter = doc["Parameters"]["ExchangeIssuers"]
    assert (parameter["Type"], parameter["Default"]) == ("String", "")
    pattern = re.compile(parameter["AllowedPattern"])
    assert pattern.fullmatch("")
    assert pattern.fullmatch("https://a.example.com,https://b.example.com/t")
    assert not pattern.fullmatch("http://a.example.com")
    variables = doc["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["FOLDGATE_EXCHANGE_ISSUERS"] == "ExchangeIssuers"


def test_the_upstream_oauth_context_gets_the_operators_list(tmp_path: Any) -> None:
    from foldgate.app.wiring import open_upstream_oauth

    settings = Settings(
        sqlite_path=str(tmp_path / "fg.sqlite3"), exchange_issuers=["https://idp.example.com"]
    )
    ctx = open_upstream_oauth(settings)
    assert ctx is not None
    assert ctx.exchange_issuers == ("https://idp.example.com",)
