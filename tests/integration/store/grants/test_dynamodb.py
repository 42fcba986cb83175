"""DynamoGrantStore's items on the table template.yaml deploys (moto_server, KMS envelope): no secret in
any item in clear, items bound to their key, the TTL attribute only on consents, token-free listing."""

from __future__ import annotations

import math
from typing import Any

import boto3
import pytest

from foldgate.app.wiring import open_grant_store
from foldgate.config.settings import Settings
from foldgate.errors import StoreError
from foldgate.store.grants.base import SHARED, ClientRegistration, PendingConsent, UpstreamGrant
from foldgate.store.grants.dynamodb import DynamoGrantStore
from foldgate.store.grants.kms import KmsEnvelopeCipher

ACCESS = "gho_ACCESS_TOKEN_0123456789abcdef"
REFRESH = "ghr_REFRESH_TOKEN_0123456789abcdef"
CLIENT_SECRET = "CLIENT_SECRET_0123456789abcdef"
VERIFIER = "PKCE_VERIFIER_0123456789abcdef0123456789abcdef"


@pytest.fixture
def client(moto_endpoint: str) -> Any:
    return boto3.client("dynamodb")


@pytest.fixture
def store(dynamo_table: str, kms_key: str) -> DynamoGrantStore:
    return DynamoGrantStore(dynamo_table, KmsEnvelopeCipher(kms_key))


def grant(subject: str = SHARED, **kw: Any) -> UpstreamGrant:
    fields: dict[str, Any] = {"access_token": ACCESS, "refresh_token": REFRESH, "expires_at": 1000.5}
    fields.update(kw)
    return UpstreamGrant("acme", "github", subject, scope="repo", **fields)


def consent(state: str, expires_at: float) -> PendingConsent:
    return PendingConsent(
        state, "acme", "github", "bob", VERIFIER, "https://gw/cb", "https://a.example", None, None, expires_at
    )


def items(client: Any, table: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = client.scan(TableName=table)["Items"]
    return found


def test_no_secret_is_in_any_item_in_clear(store: DynamoGrantStore, client: Any, dynamo_table: str) -> None:
    store.put_grant(grant())
    store.put_client(
        ClientRegistration("acme", "github", "https://a.example", "cid", client_secret=CLIENT_SECRET)
    )
    store.put_pending(consent("st-123", 4e9))
    raw = repr(items(client, dynamo_table))
    assert "repo" in raw  # the clear attributes are visible to this check ...
    for secret in (ACCESS, REFRESH, CLIENT_SECRET, VERIFIER, "st-123"):
        assert secret not in raw  # ... the secrets (and the consent's state) are not


def test_item_layout_ttl_only_on_consents(store: DynamoGrantStore, client: Any, dynamo_table: str) -> None:
    store.put_grant(grant())
    store.put_pending(consent("st", 5000.25))
    by_sk = {it["sk"]["S"]: it for it in items(client, dynamo_table)}
    stored = by_sk[f"GRANT#github#{SHARED}"]
    assert stored["pk"] == {"S": "UPGRANT#acme"}
    assert "B" in stored["sealed"]
    # The access token's expiry must not be the table's TTL attribute: the grant would be deleted.
    assert "expires_at" not in stored
    assert stored["token_expires_at"] == {"N": "1000.5"}
    assert stored["version"] == {"N": "1"}
    assert by_sk["PENDING"]["expires_at"] == {"N": str(math.ceil(5000.25))}
    assert by_sk["PENDING"]["pk"]["S"].startswith("UPPENDING#")


def test_an_item_copied_onto_another_subject_does_not_open(
    store: DynamoGrantStore, client: Any, dynamo_table: str, kms_key: str
) -> None:
    store.put_grant(grant("alice"))
    store.put_grant(grant("mallory", access_token="mallory-token"))
    by_sk = {it["sk"]["S"]: it for it in items(client, dynamo_table)}
    client.put_item(
        TableName=dynamo_table,
        Item={**by_sk["GRANT#github#mallory"], "sealed": by_sk["GRANT#github#alice"]["sealed"]},
    )
    with pytest.raises(StoreError):
        store.get_grant("acme", "github", "mallory")
    # A cold instance (no cached data key): KMS itself refuses the other row's context.
    with pytest.raises(StoreError):
        DynamoGrantStore(dynamo_table, KmsEnvelopeCipher(kms_key)).get_grant("acme", "github", "mallory")


def test_a_tampered_or_mistyped_item_is_a_store_error(
    store: DynamoGrantStore, client: Any, dynamo_table: str
) -> None:
    store.put_grant(grant())
    (item,) = items(client, dynamo_table)
    sealed = item["sealed"]["B"]
    client.put_item(
        TableName=dynamo_table, Item={**item, "sealed": {"B": sealed[:-1] + bytes([sealed[-1] ^ 1])}}
    )
    with pytest.raises(StoreError):
        store.get_grant("acme", "github", SHARED)
    client.put_item(TableName=dynamo_table, Item={**item, "sealed": {"S": "text"}})
    with pytest.raises(StoreError, match="sealed"):
        store.get_grant("acme", "github", SHARED)


def test_listing_never_reads_sealed_values(store: DynamoGrantStore) -> None:
    store.put_grant(grant())
    store.put_client(ClientRegistration("acme", "github", "https://a.example", "cid"))
    responses: list[Any] = []
    store.client.meta.events.register(
        "after-call.dynamodb.Query", lambda parsed, **_: responses.append(parsed)
    )
    summaries = store.list_grants("acme")
    assert [(s.server, s.subject, s.expires_at, s.scope) for s in summaries] == [
        ("github", SHARED, 1000.5, "repo")
    ]
    assert responses
    assert all("sealed" not in it for r in responses for it in r["Items"])
    assert store.list_grants("acme", "git") == []  # a server name prefix is not the server


def test_names_that_could_reach_other_items_are_refused(store: DynamoGrantStore) -> None:
    with pytest.raises(StoreError):
        store.get_grant("acme#x", "github", SHARED)
    with pytest.raises(StoreError):
        store.list_grants("acme", "github#")


def test_wiring_opens_the_cloud_store_with_the_kms_key(dynamo_table: str, kms_key: str) -> None:
    settings = Settings.from_env(
        {
            "FOLDGATE_STORE": "dynamodb",
            "FOLDGATE_TABLE_NAME": dynamo_table,
            "FOLDGATE_GRANT_KMS_KEY_ID": kms_key,
        }
    )
    store = open_grant_store(settings)
    assert isinstance(store, DynamoGrantStore)
    stored = store.put_grant(grant())
    assert stored is not None
    assert open_grant_store(settings).get_grant("acme", "github", SHARED) == stored
