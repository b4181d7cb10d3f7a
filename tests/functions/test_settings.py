"""Each Lambda function reads the settings its view declares (docchat.processes) and fails,
naming the DOCCHAT_ variables and the function, when one it cannot run without is unset: in a
Lambda an empty DOCCHAT_OPENSEARCH_ENDPOINT is an error, never the embedded SQLite index."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import pytest

from docchat.config import PREFIX, Settings
from docchat.errors import ConfigError
from docchat.processes import FUNCTIONS, ChatSettings, Declared
from docchat.wiring.cloud import CloudServices, cloud_app, services
from tests.conftest import REPO
from tests.functions.conftest import FUNCTIONS as PIPELINE
from tests.functions.conftest import FakeContext, _load_handler

# A handler that fails before its work has no metrics to flush: Powertools warns about that.
pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")
POWERTOOLS = {
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_NAMESPACE": "docchat-test",
    "POWERTOOLS_LOG_LEVEL": "CRITICAL",
}
#: Every handler in functions/ but the chat app: the pipeline's steps, the watchdog, the sync.
HANDLERS = (*PIPELINE, "sync")
#: What only the CLI and `docchat serve` read: no function's view declares these.
LOCAL_ONLY = {"data_dir", "api_token", "allowed_hosts", "web_url"}


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


def _required(name: str) -> list[str]:
    return FUNCTIONS[name].required()


def _set(monkeypatch: pytest.MonkeyPatch, settings: list[str]) -> None:
    for setting in settings:
        value = "https://127.0.0.1:9" if setting == "opensearch_endpoint" else "set-by-the-test"
        monkeypatch.setenv(_variable(setting), value)


def test_settings_every_handler_has_a_view() -> None:
    assert set(FUNCTIONS) == {*HANDLERS, "chat"}


@pytest.mark.usefixtures("bare_environment")
@pytest.mark.parametrize("name", HANDLERS)
def test_settings_each_handler_without_its_settings_names_them(name: str) -> None:
    # Given a handler whose view declares settings it cannot run without
    handler = _load_handler(name)
    assert _required(name)

    # When it is invoked with none of them set, Then it fails before reading the event, and
    # the message names the function and every variable to set
    with pytest.raises(ConfigError, match=f"^the {name} function needs ") as raised:
        handler.handler({}, FakeContext(name))
    for setting in _required(name):
        assert _variable(setting) in str(raised.value), (name, str(raised.value))


@pytest.mark.usefixtures("bare_environment")
@pytest.mark.parametrize("name", HANDLERS)
def test_settings_each_handler_names_only_what_is_missing(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given every required setting but the last one set
    handler = _load_handler(name)
    *given, missing = _required(name)
    _set(monkeypatch, given)

    with pytest.raises(
        ConfigError, match=f"the {name} function needs {_variable(missing)}: set it"
    ):
        handler.handler({}, FakeContext(name))


@pytest.mark.usefixtures("bare_environment")
@pytest.mark.parametrize("name", [n for n in HANDLERS if "opensearch_endpoint" in _required(n)])
def test_settings_an_empty_opensearch_endpoint_is_an_error_not_sqlite(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the stack's variables with DOCCHAT_OPENSEARCH_ENDPOINT empty, as a stack whose
    # collection endpoint did not resolve would set it
    handler = _load_handler(name)
    _set(monkeypatch, _required(name))
    monkeypatch.setenv("DOCCHAT_OPENSEARCH_ENDPOINT", "")

    with pytest.raises(ConfigError, match="DOCCHAT_OPENSEARCH_ENDPOINT"):
        handler.handler({}, FakeContext(name))


def _adapters_used(name: str) -> set[str]:
    """The services functions/<name>/app.py takes (`s.<adapter>`), its view aside."""
    source = (REPO / "functions" / name / "app.py").read_text()
    return set(re.findall(r"\bs\.(\w+)", source)) - {"view"}


@pytest.mark.usefixtures("bare_environment")
@pytest.mark.parametrize("name", HANDLERS)
def test_settings_each_handler_builds_its_adapters_from_only_its_declared_variables(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given only the variables the function's view requires (the rest at their defaults)
    _set(monkeypatch, _required(name))

    # When its services build every adapter its handler takes, Then each one's settings are
    # in the view (a group it lacks is a TypeError), and the view holds nothing else
    live = services(name)
    built = {adapter: getattr(live, adapter) for adapter in _adapters_used(name)}
    assert built, name
    assert type(live.settings) is FUNCTIONS[name]
    assert set(live.settings.model_dump()) == set(FUNCTIONS[name].model_fields)


def test_settings_a_view_holds_only_what_it_declares() -> None:
    view = FUNCTIONS["embed"].from_env(
        {"DOCCHAT_ARTIFACTS_BUCKET": "a", "DOCCHAT_OPENSEARCH_ENDPOINT": "https://x"},
        reader="the embed function",
    )

    assert view.model_dump()["artifacts_bucket"] == "a"
    assert not hasattr(view, "opensearch_endpoint")


@pytest.mark.parametrize("view", sorted(set(FUNCTIONS.values()), key=lambda v: v.__name__))
def test_settings_views_type_their_fields_as_settings_does(view: type[Declared]) -> None:
    for name, field in view.model_fields.items():
        assert field.annotation == Settings.model_fields[name].annotation, (view, name)


def test_settings_the_cli_reads_every_setting_and_the_functions_all_but_its_own() -> None:
    declared: set[str] = set().union(*(view.model_fields for view in FUNCTIONS.values()))

    assert set(Settings.model_fields) - declared == LOCAL_ONLY
    assert declared <= set(Settings.model_fields)


def test_settings_a_view_naming_a_setting_settings_lacks_is_refused() -> None:
    with pytest.raises(TypeError, match=r"declares settings Settings lacks: \['chunk_sise'\]"):

        class Misspelt(Declared):
            chunk_sise: int


@pytest.mark.usefixtures("bare_environment")
@pytest.mark.parametrize("missing", ChatSettings.required())
def test_settings_the_chat_app_does_not_start_without_its_settings(
    missing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the chat function's settings but one, When uvicorn's factory builds the app
    _set(monkeypatch, [s for s in ChatSettings.required() if s != missing])

    # Then it fails at once, naming the variable (uvicorn exits; the adapter never sees it ready)
    with pytest.raises(ConfigError, match=f"the chat function needs {_variable(missing)}:"):
        cloud_app()


@pytest.mark.usefixtures("bare_environment")
def test_settings_the_chat_app_starts_with_its_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCCHAT_OPENSEARCH_ENDPOINT", "https://127.0.0.1:9")
    monkeypatch.setenv("DOCCHAT_DOCUMENTS_TABLE", "docchat-documents")
    monkeypatch.setenv("DOCCHAT_CONVERSATIONS_TABLE", "docchat-conversations")

    assert cloud_app().title == "docchat"
    live: Any = services("chat")
    assert isinstance(live, CloudServices) and isinstance(live.settings, ChatSettings)
