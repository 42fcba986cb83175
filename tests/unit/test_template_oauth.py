"""template.yaml's OAuth wiring agrees with the code that reads it: every FOLDGATE_* variable the stack
sets is a Settings field (a typo would silently leave OAuth off or mis-mapped), the stack's Cognito
pool defines exactly the tier scopes the grant maps, its clients are the flows agents use, and the
Cognito issuer, client-id audience and scope prefix are what the settings expect when it is created."""

from __future__ import annotations

from typing import Any

import yaml

from foldgate.auth.oauth.grant import TIERS
from foldgate.config.settings import Settings
from foldgate.dev.bench.moto import TEMPLATE, _CfnLoader, template_resource


def _template() -> dict[str, Any]:
    # The same CloudFormation-tag-tolerant loader template_resource uses, for the parts outside Resources.
    doc: dict[str, Any] = yaml.load(TEMPLATE.read_text(encoding="utf-8"), Loader=_CfnLoader)
    return doc


def test_every_foldgate_variable_the_stack_sets_is_a_setting() -> None:
    env = _template()["Globals"]["Function"]["Environment"]["Variables"]
    names = {k.removeprefix("FOLDGATE_").lower() for k in env if k.startswith("FOLDGATE_")}
    assert {"oauth_issuer", "oauth_audience", "oauth_audience_claim", "oauth_scope_prefix"} <= names
    assert names <= set(Settings.model_fields)


def test_the_created_cognito_pool_is_the_issuer_with_client_id_audiences_and_prefixed_scopes() -> None:
    env = _template()["Globals"]["Function"]["Environment"]["Variables"]
    condition, created, external = env["FOLDGATE_OAUTH_ISSUER"]
    assert (condition, external) == ("CreateCognito", "OAuthIssuer")
    assert created == "https://cognito-idp.${AWS::Region}.amazonaws.com/${CognitoUserPool}"
    assert env["FOLDGATE_OAUTH_AUDIENCE"][1] == "${CognitoMachineClient},${CognitoUserClient}"
    assert env["FOLDGATE_OAUTH_AUDIENCE_CLAIM"] == ["CreateCognito", "client_id", "aud"]
    assert env["FOLDGATE_OAUTH_SCOPE_PREFIX"][1] == ["", ["CognitoResourceServer", "/"]]


def test_cognito_scopes_and_flows_match_what_the_gateway_maps() -> None:
    server = template_resource("CognitoResourceServer")
    assert [s["ScopeName"] for s in server["Properties"]["Scopes"]] == list(TIERS)
    machine = template_resource("CognitoMachineClient")["Properties"]
    user = template_resource("CognitoUserClient")["Properties"]
    assert (machine["AllowedOAuthFlows"], machine["GenerateSecret"]) == (["client_credentials"], True)
    assert (user["AllowedOAuthFlows"], user["GenerateSecret"]) == (["code"], False)
    for client in (machine, user):
        granted = [s[1][1] for s in client["AllowedOAuthScopes"] if isinstance(s, list)]
        assert granted == [f"/{t}" for t in TIERS]
    for name in ("CognitoUserPool", "CognitoResourceServer", "CognitoMachineClient", "CognitoDomain"):
        assert template_resource(name)["Condition"] == "CreateCognito"
    assert template_resource("CognitoUserPool")["Properties"]["AdminCreateUserConfig"] == {
        "AllowAdminCreateUserOnly": True
    }
