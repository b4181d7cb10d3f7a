"""Each Lambda entry point names the settings it cannot run without and fails, naming the
DOCCHAT_ variables, when one is unset: in a Lambda an empty DOCCHAT_OPENSEARCH_ENDPOINT is an
error, never the embedded SQLite index."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from docchat.config import PREFIX, Settings
from docchat.errors import ConfigError
from docchat.wiring.cloud import CHAT_SETTINGS, cloud_app, services
from tests.functions.conftest import FUNCTIONS, FakeContext, _load_handler

# A handler that fails before its work has no metrics to flush: Powertools warns about that.
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")
POWERTOOLS = {
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_NAMESPACE": "docchat-test",
    "POWERTOOLS_LOG_LEVEL": "CRITICAL",
}


@pytest.fixture
def bare_environment(dummy_aws: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No DOCCHAT_ variable set; services built afresh from that."""
    for name in list(os.environ):
        if name.startswith(PREFIX):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    for name, value in POWERTOOLS.items():
        monkeypatch.setenv(name, value)
    services.cache_clear()
    yield
    services.cache_clear()


def _variable(setting: str) -> str:
    return PREFIX + setting.upper()


@pytest.mark.usefixtures("bare_environment")
@pytest.mark.parametrize("name", FUNCTIONS)
def test_settings_each_handler_without_its_settings_names_them(name: str) -> None:
    # Given a handler and the settings it declares
    handler = _load_handler(name)
    required: tuple[str, ...] = handler.REQUIRED
    assert required and set(required) <= set(Settings.model_fields)

    # When it is invoked with none of them set, Then it fails before reading the event, and
    # the message names every variable to set
    with pytest.raises(ConfigError) as raised:
        handler.handler({}, FakeContext(name))
    for setting in required:
        assert _variable(setting) in str(raised.value), (name, str(raised.value))


@pytest.mark.usefixtures("bare_environment")
@pytest.mark.parametrize("name", FUNCTIONS)
def test_settings_each_handler_names_only_what_is_missing(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given every declared setting but the last one set
    handler = _load_handler(name)
    *given, missing = handler.REQUIRED
    for setting in given:
        monkeypatch.setenv(_variable(setting), "set-by-the-test")

    with pytest.raises(ConfigError, match=f"the {name} function needs {_variable(missing)}:"):
        handler.handler({}, FakeContext(name))


@pytest.mark.usefixtures("bare_environment")
@pytest.mark.parametrize(
    "name", [n for n in FUNCTIONS if "opensearch_endpoint" in _load_handler(n).REQUIRED]
)
def test_settings_an_empty_opensearch_endpoint_is_an_error_not_sqlite(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the stack's variables with DOCCHAT_OPENSEARCH_ENDPOINT empty, as a stack whose
    # collection endpoint did not resolve would set it
    handler = _load_handler(name)
    for setting in handler.REQUIRED:
        monkeypatch.setenv(_variable(setting), "set-by-the-test")
    monkeypatch.setenv("DOCCHAT_OPENSEARCH_ENDPOINT", "")

    with pytest.raises(ConfigError, match="DOCCHAT_OPENSEARCH_ENDPOINT"):
        handler.handler({}, FakeContext(name))


@pytest.mark.usefixtures("bare_environment")
@pytest.mark.parametrize("missing", CHAT_SETTINGS)
def test_settings_the_chat_app_does_not_start_without_its_settings(
    missing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the chat function's settings but one, When uvicorn's factory builds the app
    for setting in CHAT_SETTINGS:
        if setting != missing:
            monkeypatch.setenv(_variable(setting), "https://127.0.0.1:9")

    # Then it fails at once, naming the variable (uvicorn exits; the adapter never sees it ready)
    with pytest.raises(ConfigError, match=f"the chat function needs {_variable(missing)}:"):
        cloud_app()


@pytest.mark.usefixtures("bare_environment")
def test_settings_the_chat_app_starts_with_its_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCCHAT_OPENSEARCH_ENDPOINT", "https://127.0.0.1:9")
    monkeypatch.setenv("DOCCHAT_DOCUMENTS_TABLE", "docchat-documents")

    assert cloud_app().title == "docchat"
