"""Every error docchat reports lives in errors.py and is registered with a code of its own."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import docchat
from docchat import errors
from docchat.errors import REGISTRY, DocchatError, code_for_name, registered
from docchat.ingest.failures import failure_reason


def _import_all_of_docchat() -> None:
    for module in pkgutil.walk_packages(docchat.__path__, prefix="docchat."):
        importlib.import_module(module.name)


def _subclasses(base: type[DocchatError]) -> set[type[DocchatError]]:
    found: set[type[DocchatError]] = set()
    todo = [base]
    while todo:
        cls = todo.pop()
        found.add(cls)
        todo.extend(cls.__subclasses__())
    return found


def unregistered(classes: set[type[DocchatError]]) -> list[str]:
    """What is wrong with `classes`: each one outside errors.py or missing from REGISTRY."""
    problems = []
    for cls in sorted(classes, key=lambda c: c.__qualname__):
        if cls.__module__ != errors.__name__:
            problems.append(f"{cls.__module__}.{cls.__qualname__} lives outside errors.py")
        if REGISTRY.get(cls.code) is not cls:
            problems.append(f"{cls.__qualname__} (code {cls.code!r}) is not registered")
    return problems


def test_errors_every_docchat_error_class_is_registered_in_errors_py() -> None:
    # Given every docchat module imported, so that each error class it defines exists
    _import_all_of_docchat()

    # When the package's error classes are collected (tests' own stay out)
    classes = {c for c in _subclasses(DocchatError) if c.__module__.startswith("docchat")}

    # Then each lives in errors.py, under its own code, and the registry holds nothing else
    assert unregistered(classes) == []
    assert set(REGISTRY.values()) == classes
    assert len({c.code for c in classes}) == len(classes)


def test_errors_a_class_left_unregistered_is_reported() -> None:
    class ForgottenError(DocchatError):
        code = "forgotten"

    assert unregistered({ForgottenError}) == [
        "tests.unit.test_errors.test_errors_a_class_left_unregistered_is_reported.<locals>."
        "ForgottenError lives outside errors.py",
        "test_errors_a_class_left_unregistered_is_reported.<locals>.ForgottenError "
        "(code 'forgotten') is not registered",
    ]


def test_errors_registering_a_taken_code_fails_at_import() -> None:
    class Twin(DocchatError):
        code = "config"

    with pytest.raises(TypeError, match="Twin reuses the code 'config' of ConfigError"):
        registered(Twin)


def test_errors_registering_needs_a_code_of_the_class_itself() -> None:
    class Inherits(errors.ConfigError):
        pass

    with pytest.raises(TypeError, match="Inherits must set its own `code`"):
        registered(Inherits)


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("SupersededError", "superseded"),
        ("ModelAccessError", "model_access"),
        ("NotPdfError", "not_pdf"),
        ("EncryptedPdfError", "encrypted_pdf"),
        ("SearchIndexUnavailableError", "index_unavailable"),
    ],
)
def test_errors_failure_reason_finds_the_code_of_a_registered_class(name: str, code: str) -> None:
    # MarkFailed imports neither uploads nor llm: the registry knows their classes anyway.
    assert code_for_name(name) == code
    assert failure_reason(name, '{"errorMessage": "said"}') == (code, "said")


def test_errors_failure_reason_calls_an_unknown_name_internal() -> None:
    assert code_for_name("KeyError") is None
    assert failure_reason("KeyError", '{"errorMessage": "x"}') == ("internal", "KeyError: x")
