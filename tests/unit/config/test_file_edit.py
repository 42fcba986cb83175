"""The config file editor behind the console's save: a YAML file keeps every other byte (comments,
order, layout), an absent key is inserted, what cannot be line-edited safely is refused, a result the
loader rejects and a file changed since the page was shown leave the file untouched, JSON is re-dumped,
the file keeps its mode and symlink, and the file source picks the change up at once."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

import pytest

from foldgate.config.file_edit import content_hash, save_settings
from foldgate.config.source import FileConfigSource
from foldgate.errors import ConfigError, ConflictError

YAML = """\
# The operator's notes: kept verbatim.
routing_mode: direct

servers:
  - name: alpha   # primary
    url: http://127.0.0.1:9/mcp
direct_tool_response_mode: auto  # was full until March
defer_threshold:   30
tools_limit: 5
"""


def write(tmp_path: Path, text: str, name: str = "foldgate.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def save(path: Path, **changes: object) -> None:
    save_settings(path, changes, content_hash(path))


def test_yaml_changes_only_the_lines_of_the_keys_concerned(tmp_path: Path) -> None:
    path = write(tmp_path, YAML)
    save(path, direct_tool_response_mode="deferred", defer_threshold=12)
    assert path.read_text() == YAML.replace("auto  # was", "deferred  # was").replace(
        "defer_threshold:   30", "defer_threshold:   12"
    )


def test_an_absent_key_is_inserted_after_the_edited_ones_or_at_the_end(tmp_path: Path) -> None:
    path = write(tmp_path, YAML)
    save(path, defer_threshold=8, listing_token_budget=4000)
    lines = path.read_text().splitlines()
    assert lines[lines.index("defer_threshold:   8") + 1] == "listing_token_budget: 4000"
    assert lines[-1] == "tools_limit: 5"
    # Alone, and in a file without a final newline, the key goes at the end on a line of its own.
    bare = write(tmp_path, "servers: []\n# trailing note", "bare.yaml")
    save(bare, direct_tool_response_mode="full")
    assert bare.read_text() == "servers: []\n# trailing note\ndirect_tool_response_mode: full\n"


def test_values_the_file_already_means_are_not_written(tmp_path: Path) -> None:
    path = write(tmp_path, YAML)
    inode = path.stat().st_ino
    # defer_threshold is written as 30; listing_token_budget is absent and None is its default.
    save(path, defer_threshold=30, listing_token_budget=None, direct_tool_response_mode="auto")
    assert path.read_text() == YAML
    assert path.stat().st_ino == inode
    save(path, defer_threshold=30, listing_token_budget=100)
    assert path.read_text() == YAML + "listing_token_budget: 100\n"


def test_null_and_quoted_values_round_trip(tmp_path: Path) -> None:
    path = write(tmp_path, 'servers: []\nlisting_token_budget: 900\ndirect_tool_response_mode: "auto"\n')
    save(path, listing_token_budget=None, direct_tool_response_mode="deferred")
    assert (
        path.read_text() == "servers: []\nlisting_token_budget: null\ndirect_tool_response_mode: deferred\n"
    )


def test_a_value_the_loader_rejects_is_refused_and_the_file_untouched(tmp_path: Path) -> None:
    path = write(tmp_path, YAML)
    with pytest.raises(ConfigError, match=r"not saved: .*defer_threshold") as refused:
        save(path, defer_threshold=-1)
    # The message names the operator's file, not the temporary one it was validated in.
    assert str(path) in refused.value.message
    assert path.read_text() == YAML
    assert sorted(p.name for p in tmp_path.iterdir()) == ["foldgate.yaml"]


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("servers: []\ndefer_threshold:\n  - 3\n", "defer_threshold"),  # a list under the key
        ("servers: []\ndefer_threshold: &t 3\n", "defer_threshold"),  # an anchor
        ("servers: []\ndefer_threshold: 3\ndefer_threshold: 4\n", "defer_threshold"),  # twice
        ('servers: []\n"defer_threshold": 3\n', "defer_threshold"),  # a quoted key
        ("{servers: [], defer_threshold: 3}\n", "defer_threshold"),  # flow style
        ("servers: []\ndirect_tool_response_mode: full\n  and more\n", "direct_tool_response_mode"),
        ("- not\n- a mapping\n", "defer_threshold"),
    ],
)
def test_what_is_not_a_plain_top_level_scalar_is_refused_not_redumped(
    tmp_path: Path, text: str, key: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=r"by hand|not a mapping"):
        save(path, **{key: 5 if key == "defer_threshold" else "deferred"})
    assert path.read_text() == text


def test_a_file_changed_since_the_page_was_shown_is_a_conflict(tmp_path: Path) -> None:
    path = write(tmp_path, YAML)
    seen = content_hash(path)
    path.write_text(YAML + "# someone else's edit\n")
    with pytest.raises(ConflictError):
        save_settings(path, {"defer_threshold": 3}, seen)
    assert path.read_text().endswith("# someone else's edit\n")
    assert "defer_threshold:   30" in path.read_text()


def test_json_is_redumped_with_indent_two(tmp_path: Path) -> None:
    path = write(tmp_path, '{"servers": [], "defer_threshold": 30}', "foldgate.json")
    save(path, defer_threshold=4, direct_tool_response_mode="full")
    text = path.read_text()
    assert json.loads(text) == {"servers": [], "defer_threshold": 4, "direct_tool_response_mode": "full"}
    assert text == json.dumps(json.loads(text), indent=2) + "\n"


def test_the_file_keeps_its_mode_and_a_symlink_stays_a_symlink(tmp_path: Path) -> None:
    real = write(tmp_path, YAML, "real.yaml")
    os.chmod(real, 0o640)
    link = tmp_path / "foldgate.yaml"
    link.symlink_to(real)
    save(link, defer_threshold=3)
    assert link.is_symlink()
    assert "defer_threshold:   3" in real.read_text()
    assert stat.S_IMODE(real.stat().st_mode) == 0o640


def test_only_config_key_names_are_written(tmp_path: Path) -> None:
    path = write(tmp_path, YAML)
    with pytest.raises(ConfigError, match="not a config key"):
        save_settings(path, {"servers:\n- x": 1}, content_hash(path))
    assert path.read_text() == YAML


def test_the_file_source_reloads_at_once_after_a_save(tmp_path: Path) -> None:
    path = write(tmp_path, YAML)
    source = FileConfigSource(path, max_age=3600.0)
    assert source.get("default").defer_threshold == 30
    save(path, defer_threshold=9)
    # Within max_age a plain get keeps the cached config; reload reads the file now.
    assert source.reload("default").defer_threshold == 9
    assert source.get("default").defer_threshold == 9


@pytest.mark.parametrize("failing", ["tempfile.mkstemp", "os.replace"])
def test_a_failed_write_is_a_config_error_leaving_the_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    path = write(tmp_path, YAML)

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(failing, refuse)
    with pytest.raises(ConfigError, match=r"cannot write.*No space left"):
        save(path, defer_threshold=3)
    assert path.read_text() == YAML
    assert sorted(p.name for p in tmp_path.iterdir()) == ["foldgate.yaml"]
