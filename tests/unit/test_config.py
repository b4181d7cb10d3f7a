"""Settings come from DOCCHAT_* variables, CLI flags win, and bad values say what to fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from docchat.config import Settings
from docchat.errors import ConfigError


def test_settings_read_environment_and_overrides() -> None:
    settings = Settings.from_env(
        {"DOCCHAT_CHUNK_SIZE": "800", "DOCCHAT_DATA_DIR": "/env/dir", "OTHER": "x"},
        data_dir=Path("/flag/dir"),
    )

    assert settings.chunk_size == 800
    assert settings.data_dir == Path("/flag/dir")
    assert settings.index_path == Path("/flag/dir/index.sqlite3")


def test_settings_defaults_without_environment() -> None:
    settings = Settings.from_env({}, data_dir=None)

    assert (settings.data_dir, settings.chunk_size, settings.chunk_overlap) == (
        Path(".docchat"),
        1500,
        200,
    )


def test_settings_errors_name_the_variable() -> None:
    with pytest.raises(ConfigError, match="DOCCHAT_CHUNK_SIZE: Input should be a valid integer"):
        Settings.from_env({"DOCCHAT_CHUNK_SIZE": "big"})
    with pytest.raises(
        ConfigError, match=r"chunk overlap \(900\) must be smaller than the chunk size \(800\)"
    ):
        Settings.from_env({"DOCCHAT_CHUNK_SIZE": "800", "DOCCHAT_CHUNK_OVERLAP": "900"})


def test_settings_cap_the_conversion_child_under_the_lambda_functions_memory() -> None:
    # In Lambda the conversion child and its parent share the function's memory: the child's
    # cap leaves the parent its room, so a PDF that floods memory fails in the child as
    # PdfTooLargeError instead of the whole function being killed (and retried).
    from docchat.config import FUNCTION_HEADROOM_MIB

    convert = Settings.from_env({"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "2048"})
    ocr = Settings.from_env({"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "3008"})
    chosen = Settings.from_env(
        {"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "3008", "DOCCHAT_CONVERT_MEMORY_MIB": "1024"}
    )

    assert convert.convert_memory_mib == 2048 - FUNCTION_HEADROOM_MIB
    assert ocr.convert_memory_mib == 2048  # the default already leaves room
    assert chosen.convert_memory_mib == 1024
    assert Settings.from_env({}).convert_memory_mib == 2048  # locally: the default
