"""`foldgate bench scale-storage`: starts its own moto_server, indexes a corpus through the real
indexer into the template's table, sizes what the tenant keeps, counts listing calls and prices a
tenant-month; pinned on the small demo catalog (placed as one of the corpora), and skipping cleanly
when the corpora are absent."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from foldgate.app.cli import main
from tests.gateway_fixture import DEMO_CATALOG

SMALL = ["--registry-tenants", "3", "40", "--ssm-parameters", "40", "--servers-per-tenant", "4", "--json"]


def test_the_bench_sizes_a_tenant_counts_listing_calls_and_prices_a_month(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpora" / "mcptoolbench-pp" / "tools.jsonl"
    corpus.parent.mkdir(parents=True)
    shutil.copy(DEMO_CATALOG, corpus)
    assert main(["bench", "scale-storage", "--corpora", str(tmp_path / "corpora"), *SMALL]) == 0
    report = json.loads(capsys.readouterr().out)
    [row] = report["corpora"]
    assert row["tools"] == 5
    assert row["storage_bytes"] > row["item_bytes"] > 0
    assert row["ops"]["first_index"]["wru"] > 0
    assert row["ops"]["unchanged_schedule_run"]["wru"] == 0  # nothing changed: nothing written
    assert row["ops"]["changed_run"]["wru"] > 0
    assert row["ops"]["config_read"]["rru"] == 0.5
    assert report["ssm_listing"]["tenants"] == 10
    assert report["ssm_listing"]["moto_calls"] >= report["ssm_listing"]["aws_calls_page_50"]
    assert [(g["tenants"], g["moto_calls"]) for g in report["registry_listing"]] == [(3, 1), (40, 1)]
    assert report["cost"]["total_usd"] > 0
    assert len(report["skipped"]) == 3


def test_without_the_corpora_the_bytes_rows_are_skipped_and_the_rest_still_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "scale-storage", "--corpora", str(tmp_path / "absent"), *SMALL]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["corpora"] == []
    assert len(report["skipped"]) == 4
    assert "cost" not in report
    assert report["registry_listing"][-1]["tenants"] == 40
