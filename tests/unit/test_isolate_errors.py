"""A reader the installation lacks is not a damaged file (issue 43: `make sam-local` with
mammoth left out of functions/convert/requirements.txt told the .docx's owner to open it in
Word, save it again and upload that)."""

from __future__ import annotations

import pickle

import pytest

from docchat.errors import ConfigError, CorruptFileError
from docchat.ingest import formats, isolate


def test_a_missing_reader_module_says_the_installation_lacks_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def convert(name: str, data: bytes) -> object:
        raise ModuleNotFoundError("No module named 'mammoth'", name="mammoth")

    monkeypatch.setattr(formats, "convert", convert)

    with pytest.raises(ConfigError) as raised:
        isolate._document("minutes.docx", b"PK")

    message = str(raised.value)
    assert "mammoth" in message and "save it again" not in message
    # It crosses back from the conversion's child as it is
    assert isinstance(pickle.loads(pickle.dumps(raised.value)), ConfigError)


def test_anything_else_untyped_is_still_a_damaged_file(monkeypatch: pytest.MonkeyPatch) -> None:
    def convert(name: str, data: bytes) -> object:
        raise KeyError("w:type")

    monkeypatch.setattr(formats, "convert", convert)

    with pytest.raises(CorruptFileError, match="save it again"):
        isolate._document("minutes.docx", b"PK")
