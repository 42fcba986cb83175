"""template.yaml's grant key agrees with the code that uses it: the functions get its id in the setting
the wiring reads, only their roles may use it and only under the encryption context the cipher sends,
the account may administer but not use it, and the grant writes IAM allows are the store's partitions."""

from __future__ import annotations

from typing import Any

import yaml

from foldgate.config.settings import Settings
from foldgate.dev.bench.moto import TEMPLATE, _CfnLoader, template_resource
from foldgate.store.grants.dynamodb import GRANT_PREFIX, PENDING_PREFIX
from foldgate.store.grants.kms import CONTEXT_KEY

FUNCTIONS = ("McpFunction", "CodeFunction", "IndexerFunction", "AdminFunction", "TaskWorkerFunction")
USE = {"kms:GenerateDataKey", "kms:Decrypt"}


def _template() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.load(TEMPLATE.read_text(encoding="utf-8"), Loader=_CfnLoader)
    return doc


def _key_statements() -> dict[str, dict[str, Any]]:
    policy = template_resource("GrantKey")["Properties"]["KeyPolicy"]
    return {s["Sid"]: s for s in policy["Statement"]}


def test_every_function_is_given_the_key_id_in_the_setting_the_wiring_reads() -> None:
    env = _template()["Globals"]["Function"]["Environment"]["Variables"]
    assert env["FOLDGATE_GRANT_KMS_KEY_ID"] == "GrantKey"  # !Ref GrantKey: the key id
    assert "grant_kms_key_id" in Settings.model_fields
    for name in FUNCTIONS:
        local = template_resource(name)["Properties"]["Environment"]["Variables"]
        assert "FOLDGATE_GRANT_KMS_KEY_ID" not in local  # no function overrides it


def test_only_the_function_roles_use_the_key_and_only_under_foldgates_context() -> None:
    statements = _key_statements()
    users = [s for s in statements.values() if s["Effect"] == "Allow" and USE & set(_actions(s))]
    assert len(users) == 1
    (use,) = users
    assert set(use["Action"]) == USE
    assert use["Principal"]["AWS"] == [f"{f}Role.Arn" for f in FUNCTIONS]  # !GetAtt <fn>Role.Arn
    assert use["Condition"]["ForAllValues:StringEquals"] == {"kms:EncryptionContextKeys": [CONTEXT_KEY]}
    assert use["Condition"]["Null"] == {"kms:EncryptionContextKeys": "false"}


def test_the_account_administers_but_cannot_use_the_key() -> None:
    admin = _key_statements()["AccountAdministersTheKey"]
    actions = _actions(admin)
    assert "kms:*" not in actions
    assert "kms:PutKeyPolicy" not in actions  # covered by kms:Put* (so the stack can update the policy)
    assert "kms:Put*" in actions
    # CreateGrant would let an account principal hand itself Decrypt without touching the policy.
    usage = (
        "kms:CreateGrant",
        "kms:Decrypt",
        "kms:Encrypt",
        "kms:GenerateDataKey",
        "kms:ReEncrypt",
        "kms:GenerateDataKeyWithoutPlaintext",
    )
    for action in actions:
        prefix = action.removesuffix("*")
        assert not any(u.startswith(prefix) for u in usage), action
    assert template_resource("GrantKey")["Properties"]["EnableKeyRotation"] is True


def test_grant_writes_are_confined_to_the_stores_partitions() -> None:
    wanted = [f"{GRANT_PREFIX}*", f"{PENDING_PREFIX}*"]
    pairs = (
        ("McpFunction", "UpstreamGrantWrite"),
        ("CodeFunction", "UpstreamGrantRefresh"),
        ("AdminFunction", "UpstreamGrantWrite"),
    )
    for name, sid in pairs:
        statements = template_resource(name)["Properties"]["Policies"][0]["Statement"]
        (grant,) = [s for s in statements if s["Sid"] == sid]
        assert grant["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"] == wanted
    code = template_resource("CodeFunction")["Properties"]["Policies"][0]["Statement"]
    assert not any("dynamodb:DeleteItem" in _actions(s) for s in code)


def _actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else list(action)
