"""Where the local search model is looked for (foldgate.config.model_home): FOLDGATE_MODEL_DIR alone
when set; otherwise a checkout's .model/, the per-user data directory an installed package uses, then
the Lambda layer's /opt/model; a missing model's message says what to do in both kinds of install."""

from __future__ import annotations

from pathlib import Path

import pytest

from foldgate.config.model_home import DEFAULT_MODEL_NAME, install_hint, model_dirs, user_model_dir
from foldgate.config.settings import Settings
from foldgate.search.embed import EmbeddingError, LocalEmbedder, default_model_dirs

CHECKOUT = Path(__file__).resolve().parents[3]


def test_a_configured_directory_is_the_only_place_looked_in(tmp_path: Path) -> None:
    assert model_dirs(tmp_path / "m") == [tmp_path / "m"]
    settings = Settings.from_env({"FOLDGATE_MODEL_DIR": str(tmp_path / "m")})
    assert model_dirs(settings.model_dir) == [tmp_path / "m"]


def test_the_default_order_is_checkout_user_data_then_the_layer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    user = tmp_path / "data" / "foldgate" / "model" / DEFAULT_MODEL_NAME
    assert user_model_dir() == user
    assert model_dirs() == [
        CHECKOUT / ".model" / DEFAULT_MODEL_NAME,
        user,
        Path("/opt/model") / DEFAULT_MODEL_NAME,
    ]
    assert default_model_dirs() == model_dirs()


def test_a_missing_model_names_make_model_and_the_user_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    with pytest.raises(EmbeddingError) as missing:
        LocalEmbedder(tmp_path / "nothing-here")
    assert str(tmp_path / "nothing-here") in missing.value.message
    assert missing.value.message.endswith(install_hint())
    assert "foldgate model install" in install_hint()
    assert "make model" in install_hint()
    assert str(tmp_path / "data" / "foldgate" / "model" / DEFAULT_MODEL_NAME) in install_hint()
