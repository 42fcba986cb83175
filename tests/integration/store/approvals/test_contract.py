"""The ApprovalStore contract, run over SQLite and DynamoDB (moto_server) alike: approvals and
rejections by tenant and key, a rejection replaced by a newer one, kept beside an approval, and cleared
by approving the tool."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from foldgate.store.approvals.base import ApprovalStore
from foldgate.store.approvals.dynamodb import DynamoApprovalStore
from foldgate.store.approvals.sqlite import SqliteApprovalStore
from tests.integration.store.backends import BACKENDS, open_backend

A, B, C = "a" * 64, "b" * 64, "c" * 64


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ApprovalStore]:
    yield from open_backend(request, tmp_path, SqliteApprovalStore, DynamoApprovalStore)


def test_approvals_and_rejections_are_separate_and_per_tenant(store: ApprovalStore) -> None:
    store.approve("acme", {"crm:find": A})
    store.reject("acme", {"crm:find": B, "crm#prompt:brief": C})
    store.reject("other", {"crm:add": A})
    assert store.approved("acme") == {"crm:find": A}
    assert store.rejected("acme") == {"crm:find": B, "crm#prompt:brief": C}
    assert store.approved("other") == {}
    assert store.rejected("other") == {"crm:add": A}
    assert store.rejected("nobody") == {}


def test_a_newer_rejection_replaces_the_older_one(store: ApprovalStore) -> None:
    store.reject("acme", {"crm:find": A})
    store.reject("acme", {"crm:find": B})
    assert store.rejected("acme") == {"crm:find": B}


def test_approving_clears_the_tools_rejection_only(store: ApprovalStore) -> None:
    store.reject("acme", {"crm:find": A, "crm:add": B})
    store.approve("acme", {"crm:find": A, "crm:list": C})
    assert store.approved("acme") == {"crm:find": A, "crm:list": C}
    assert store.rejected("acme") == {"crm:add": B}


def test_many_rejections_cross_the_batch_size(store: ApprovalStore) -> None:
    many = {f"crm:t{i:03d}": f"{i:064x}" for i in range(60)}
    store.reject("acme", many)
    assert store.rejected("acme") == many
    store.approve("acme", many)
    assert store.rejected("acme") == {}
    assert store.approved("acme") == many
