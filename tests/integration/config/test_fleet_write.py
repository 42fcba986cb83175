"""Where the console's fleet edits are written, on real files and real tables: the local file (a YAML
file's comments kept by a settings save, dropped only by a whole-document save; JSON; a symlinked
file stays a symlink) and the tenant config table on SQLite and DynamoDB (moto_server). Each writer
refuses a write on a version that is no longer current and an invalid document, writing nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
import yaml

from foldgate.config.fleet_edit import set_server_flag
from foldgate.config.fleet_write import NOT_EDITABLE, FileConfigWriter, TableConfigWriter, config_writer
from foldgate.config.source import FileConfigSource, StaticConfigSource
from foldgate.config.ssm import SsmConfigSource
from foldgate.config.table import TableConfigSource
from foldgate.errors import ConfigError, ConflictError, NotFoundError
from foldgate.store.configs.base import TenantConfigStore
from foldgate.store.configs.dynamodb import DynamoTenantConfigStore
from foldgate.store.configs.sqlite import SqliteTenantConfigStore
from tests.integration.store.backends import BACKENDS, open_backend

YAML = """# fleet of the default tenant
direct_tool_response_mode: full  # for now
servers:
  - name: crm   # the CRM
    url: https://crm.example/mcp
"""


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TenantConfigStore]:
    yield from open_backend(request, tmp_path, SqliteTenantConfigStore, DynamoTenantConfigStore)


def test_a_settings_save_keeps_the_yaml_comments_a_server_save_rewrites_the_file(tmp_path: Path) -> None:
    path = tmp_path / "foldgate.yaml"
    path.write_text(YAML)
    writer = FileConfigWriter(path, "default")
    assert not writer.keeps_comments
    first = writer.read("default")
    writer.save_settings("default", {"direct_tool_response_mode": "deferred"}, first.version)
    assert path.read_text() == YAML.replace("full  # for now", "deferred  # for now")
    second = writer.read("default")
    assert second.version != first.version
    written = writer.write("default", set_server_flag(second.doc, "crm", "quarantined", True), second.version)
    assert yaml.safe_load(path.read_text()) == {
        "direct_tool_response_mode": "deferred",
        "servers": [{"name": "crm", "url": "https://crm.example/mcp", "quarantined": True}],
    }
    assert "#" not in path.read_text()
    assert written.version == writer.read("default").version


def test_a_file_changed_since_it_was_read_or_an_invalid_document_is_not_written(tmp_path: Path) -> None:
    path = tmp_path / "foldgate.json"
    path.write_text('{"servers": [{"name": "crm", "url": "https://crm.example/mcp"}]}')
    writer = FileConfigWriter(path, "default")
    assert writer.keeps_comments
    seen = writer.read("default")
    path.write_text('{"servers": [{"name": "crm", "url": "https://crm2.example/mcp"}]}')
    with pytest.raises(ConflictError):
        writer.write("default", set_server_flag(seen.doc, "crm", "enabled", False), seen.version)
    fresh = writer.read("default")
    bad = {"servers": [{"name": "crm", "url": "https://crm.example/mcp", "timeout_s": 0}]}
    with pytest.raises(ConfigError, match=r"servers\[crm\]\.timeout_s"):
        writer.write("default", bad, fresh.version)
    assert "crm2.example" in path.read_text()
    with pytest.raises(NotFoundError):
        writer.read("other")


def test_a_symlinked_config_file_is_written_through_its_link(tmp_path: Path) -> None:
    real = tmp_path / "real.yaml"
    real.write_text(YAML)
    link = tmp_path / "foldgate.yaml"
    link.symlink_to(real)
    writer = FileConfigWriter(link, "default")
    seen = writer.read("default")
    writer.write("default", set_server_flag(seen.doc, "crm", "trusted", False), seen.version)
    assert link.is_symlink()
    assert yaml.safe_load(real.read_text())["servers"][0]["trusted"] is False


def test_the_table_writer_writes_on_the_revision_it_read_by_the_cloud_rules(store: TenantConfigStore) -> None:
    store.put("acme", {"servers": [{"name": "crm", "url": "https://crm.example/mcp"}]})
    writer = TableConfigWriter(store, "/foldgate")
    seen = writer.read("acme")
    written = writer.write("acme", set_server_flag(seen.doc, "crm", "enabled", False), seen.version)
    stored = store.get("acme", consistent=True)
    assert stored is not None
    assert stored.doc["servers"][0]["enabled"] is False
    assert written.version == stored.revision
    # A second editor who read the first revision is refused.
    with pytest.raises(ConflictError):
        writer.write("acme", set_server_flag(seen.doc, "crm", "trusted", False), seen.version)
    # The cloud's rules: no stdio server, whatever the local rules allow.
    stdio = {"servers": [{"name": "crm", "transport": "stdio", "command": ["sh"]}]}
    with pytest.raises(ConfigError, match="stdio"):
        writer.write("acme", stdio, written.version)
    # What-if settings land on the same conditional write.
    writer.save_settings("acme", {"defer_threshold": 3}, written.version)
    with pytest.raises(ConflictError):
        writer.save_settings("acme", {"defer_threshold": 4}, written.version)
    after = store.get("acme", consistent=True)
    assert after is not None
    assert after.doc["defer_threshold"] == 3
    with pytest.raises(NotFoundError):
        writer.read("nobody")


def test_each_source_gets_its_writer_and_parameter_store_or_fixed_configs_none(tmp_path: Path) -> None:
    """Parameter Store documents are split one parameter per server with no version covering them all:
    the console does not write them (it names `foldgate tenant apply`)."""
    path = tmp_path / "foldgate.yaml"
    path.write_text(YAML)
    assert isinstance(config_writer(FileConfigSource(path)), FileConfigWriter)
    table = TableConfigSource(SqliteTenantConfigStore(tmp_path / "c.sqlite3"), "/foldgate")
    assert isinstance(config_writer(table), TableConfigWriter)
    ssm = SsmConfigSource("/foldgate", client=boto3.client("ssm", region_name="us-east-1"))
    assert config_writer(ssm) is None
    assert config_writer(StaticConfigSource({})) is None
    assert "foldgate tenant apply" in NOT_EDITABLE
