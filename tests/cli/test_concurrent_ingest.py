"""Ingests that run while another command looks (issue 44): `docchat status` lists a document a
`docchat ingest` is working on, with its stage and progress, and two ingests into one data
directory never convert and embed the same file both."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from docchat.cli import main
from docchat.ingest import claims
from tests.cli.sandbox import DOCCHAT, env
from tests.pdfgen import make_pdf


def _pdf(path: Path, pages: int) -> None:
    text = f"The committee reviewed the budget of the {path.stem} repairs and works. " * 6
    path.write_bytes(make_pdf([[("h1", f"Part {p}"), ("body", text)] for p in range(pages)]))


def _ingest(folder: Path, data: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(DOCCHAT), "ingest", "--data-dir", str(data), str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**env(), "DOCCHAT_EMBED_BATCH_SIZE": "1"},  # progress after every chunk
    )


def test_status_lists_a_document_being_ingested_with_its_stage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an index, and an ingest of a new 150-page document running in another process
    data = tmp_path / "data"
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    _pdf(first / "small.pdf", 1)
    assert main(["ingest", "--data-dir", str(data), str(first)]) == 0
    _pdf(second / "report.pdf", 150)
    ingest = _ingest(second, data)

    # When `docchat status` looks while it works
    seen: dict[str, object] = {}
    try:
        while ingest.poll() is None and not seen:
            capsys.readouterr()
            assert main(["status", "--json", "--data-dir", str(data)]) == 0
            listed = json.loads(capsys.readouterr().out)["documents"]
            seen = next((d for d in listed if d["file_name"] == "report.pdf"), {})
        capsys.readouterr()
        assert main(["status", "--data-dir", str(data)]) == 0
        table = capsys.readouterr().out
    finally:
        ingest.kill()
        ingest.communicate()

    # Then the new document is listed with its stage and progress, and the process at it
    assert seen, "report.pdf was never listed while it was being ingested"
    assert seen["status"] in ("CONVERTING", "CHUNKING", "EMBEDDING"), seen
    working = seen["ingesting"]
    assert isinstance(working, dict) and working["pid"] == ingest.pid, seen
    assert working["stage"] == "" or working["total"] > 0, seen
    assert re.search(rf"ingesting \(process {ingest.pid}, \d+ min\)", table), table


def test_two_ingests_into_one_data_directory_index_each_file_once(tmp_path: Path) -> None:
    # Given four new files, and two ingests of them started at the same moment
    folder, data = tmp_path / "pdfs", tmp_path / "data"
    folder.mkdir()
    for n in range(4):
        _pdf(folder / f"doc{n}.pdf", 12)
    runs = [_ingest(folder, data), _ingest(folder, data)]

    outputs = [run.communicate(timeout=600) for run in runs]

    # Then each file was converted and embedded by one of them; the other found it unchanged
    for run, (out, err) in zip(runs, outputs, strict=True):
        assert run.returncode == 0, (out, err)
    for n in range(4):
        outcomes = sorted(
            re.search(rf"doc{n}\.pdf .*│ (\w+) +│", out).group(1)  # type: ignore[union-attr]
            for out, _ in outputs
        )
        assert outcomes == ["indexed", "unchanged"], (n, [o for o, _ in outputs])
    assert any("waiting for the docchat process" in err for _, err in outputs), outputs


def test_status_lists_a_document_claimed_while_it_reads_with_its_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an index, and an ingest that claims a new document just after `docchat status`
    # first reads the claims (CI's failure on bfa0351: listed, but with "ingesting": null)
    data, folder = tmp_path / "data", tmp_path / "pdfs"
    folder.mkdir()
    _pdf(folder / "small.pdf", 1)
    assert main(["ingest", "--data-dir", str(data), str(folder)]) == 0
    held: list[claims.Claim] = []
    read = claims.in_progress

    def claimed_meanwhile(data_dir: Path) -> list[claims.Work]:
        found = read(data_dir)
        if not held:
            held.append(claims.claim_when_free(data_dir, "report-1", source="/f/report.pdf"))
        return found

    monkeypatch.setattr(claims, "in_progress", claimed_meanwhile)

    # When status lists the documents
    capsys.readouterr()
    try:
        assert main(["status", "--json", "--data-dir", str(data)]) == 0
    finally:
        held[0].close()
    listed = json.loads(capsys.readouterr().out)["documents"]

    # Then a document it lists as being ingested comes with the process at it
    for document in listed:
        if document["file_name"] == "report.pdf":
            assert document["ingesting"] is not None, document
