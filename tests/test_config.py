"""Site configuration: root checks, site.yaml, and where templates come from."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder import config as config_module
from builder.config import load_config
from builder.errors import ConfigError
from tests.conftest import MakeSite


def test_site_yaml_is_validated_with_its_line(make_site: MakeSite) -> None:
    root = make_site({"site.yaml": "title: Mine\nbase_url: not-a-url\n"})
    with pytest.raises(ConfigError) as info:
        load_config(root)
    assert info.value.path == "site.yaml" and info.value.line == 2


def test_site_yaml_settings_apply(make_site: MakeSite) -> None:
    root = make_site({"site.yaml": "title: Mine\nbase_url: https://recipes.example/sub/\n"})
    cfg = load_config(root)
    assert cfg.settings.title == "Mine"
    assert cfg.settings.base_url == "https://recipes.example/sub/"
    assert cfg.out == root / "site"


def test_root_without_content_or_data_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="neither content/ nor data/"):
        load_config(tmp_path)


def test_site_templates_override_the_repository_ones(make_site: MakeSite) -> None:
    root = make_site({"templates/base.html": "<html>{% block content %}{% endblock %}</html>"})
    assert load_config(root).templates == root / "templates"
    plain = make_site()
    assert load_config(plain).templates == config_module.default_templates_dir()


def test_installed_package_uses_its_bundled_templates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Installed with a plain `pip install .`, the package has no templates/ beside it but carries a copy.
    package = tmp_path / "site-packages" / "builder"
    (package / "_templates").mkdir(parents=True)
    (package / "_templates" / "base.html").write_text("x")
    monkeypatch.setattr(config_module, "PACKAGE_DIR", package)
    assert config_module.default_templates_dir() == package / "_templates"


def test_source_date_epoch_is_honoured(make_site: MakeSite, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1785110400")
    assert load_config(make_site()).source_date_epoch == 1785110400
