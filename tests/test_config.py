"""Config: defaults, TOML, EDGE_* overrides, the search order, secrets — and errors that name file and key."""

from __future__ import annotations

import tomllib

import pytest

from edge import config
from edge.errors import ConfigError
from edge.templates import CONFIG_TOML


def test_embedded_defaults_when_no_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    loaded = config.load(None, environ={})
    assert loaded.source == "embedded defaults"
    assert loaded.provider.kind == "ollama" and loaded.security.autonomy == "supervised"
    assert loaded.state_dir == tmp_path / ".local/state/edge" and loaded.workspace == loaded.state_dir / "workspace"


def test_the_commented_template_is_exactly_the_defaults():
    assert config.build(config.Config, tomllib.loads(CONFIG_TOML), "template") == config.Config()


def test_file_then_environment(tmp_path):
    path = tmp_path / "edge.toml"
    path.write_text('[provider]\nmodel = "llama3.2:3b"\nnum_ctx = 4096\n[agent]\nsmall_model = "on"\n')
    loaded = config.load(str(path), environ={"EDGE_PROVIDER__NUM_CTX": "2048", "EDGE_SECURITY__AUTONOMY": "full",
                                             "EDGE_TOOLS__SHELL_ALLOW": "date, uptime", "EDGE_PROVIDER__THINK": "true"})
    assert loaded.provider.model == "llama3.2:3b" and loaded.provider.num_ctx == 2048
    assert loaded.security.autonomy == "full" and loaded.agent.small_model == "on"
    assert loaded.tools.shell_allow == ("date", "uptime") and loaded.provider.think is True
    assert loaded.source == str(path)


def test_search_order_prefers_edge_config_then_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "edge.toml").write_text('[provider]\nmodel = "from-cwd"\n')
    other = tmp_path / "other.toml"
    other.write_text('[provider]\nmodel = "from-env"\n')
    monkeypatch.delenv("EDGE_CONFIG", raising=False)
    assert config.load(None, environ={}).provider.model == "from-cwd"
    monkeypatch.setenv("EDGE_CONFIG", str(other))
    assert config.load(None, environ={}).provider.model == "from-env"


@pytest.mark.parametrize(("toml", "env", "expected"), [
    ('[provider]\ntimeout_s = "soon"\n', {}, "[provider] timeout_s = 'soon': expected a number ≥ 0"),
    ('[provider]\nkind = "claude"\n', {}, "[provider] kind = 'claude': expected one of 'ollama', 'openai'"),
    ('[agent]\nmax_tool_iteration = 3\n', {}, "did you mean 'max_tool_iterations'?"),
    ('[provider\nmodel = 1\n', {}, "(syntax)"),
    ('[provider]\nfallbacks = [{kind = "x"}]\n', {}, "[provider] fallbacks[0].kind = 'x'"),
    ("", {"EDGE_PROVIDER__NUM_CTX": "big"}, "environment variable EDGE_PROVIDER__NUM_CTX: [provider] num_ctx = 'big'"),
    ('provider = 3\n', {}, "[provider] = 3: expected a table"),
])
def test_bad_config_names_file_key_found_and_expected(tmp_path, toml, env, expected):
    path = tmp_path / "edge.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError) as caught:
        config.load(str(path), environ=env)
    assert expected in str(caught.value)
    if not env:
        assert str(path) in str(caught.value)


def test_missing_explicit_file_says_how_to_create_one(tmp_path):
    with pytest.raises(ConfigError, match="edge init"):
        config.load(str(tmp_path / "nope.toml"), environ={})


def test_secrets_come_from_env_or_systemd_credentials(tmp_path):
    (tmp_path / "OPENAI_API_KEY").write_text("sk-from-credential\n")
    assert config.secret("OPENAI_API_KEY", {"OPENAI_API_KEY": "sk-from-env"}) == "sk-from-env"
    assert config.secret("OPENAI_API_KEY", {"CREDENTIALS_DIRECTORY": str(tmp_path)}) == "sk-from-credential"
    assert config.secret("", {}) is None and config.secret("NOPE", {}) is None
    (tmp_path / "edge_TELEGRAM_BOT_TOKEN").write_text("123:abc\n")  # the unit loads a directory as "edge_<name>"
    assert config.secret("TELEGRAM_BOT_TOKEN", {"CREDENTIALS_DIRECTORY": str(tmp_path)}) == "123:abc"


def test_state_dir_follows_systemd(tmp_path, monkeypatch):
    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path / "var-lib-edge"))
    assert config.Config().database == tmp_path / "var-lib-edge" / "edge.db"
