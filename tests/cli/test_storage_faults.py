"""Storage faults end in a message that says what to do, never a traceback (issue 12, item 4):
a read-only data directory still serves reads, a damaged index is named as such, a full disk
fails one file and keeps the rest, a file name that is not UTF-8 is indexed like any other.
"""

from __future__ import annotations

import errno
import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.cli.sandbox import (
    DOCCHAT,
    ServerInside,
    docchat,
    env,
    mount_script,
    require_namespaces,
    run_inside,
)
from tests.pdfgen import make_pdf

NOTES = make_pdf(
    [
        [("h1", "Bridge notes"), ("body", "The bridge reopens on Monday after repairs.")],
        [("h2", "Budget"), ("body", "The repairs cost four million euros.")],
    ]
)


def _cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(DOCCHAT), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env(),
        check=False,
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two copies of a data directory with notes.pdf indexed (the real embedder): `data`, as a
    docchat that ended left it (no WAL files), and `live`, copied while a docchat had it open
    (WAL files with content, which SQLite must read without being able to write them)."""
    root = tmp_path_factory.mktemp("built")
    (root / "pdfs").mkdir()
    (root / "pdfs" / "notes.pdf").write_bytes(NOTES)
    result = _cli("ingest", root / "pdfs", "--data-dir", root / "data")
    assert result.returncode == 0, result.stderr
    assert not (root / "data" / "index.sqlite3-wal").exists()
    shutil.copytree(root / "data", root / "open")
    with sqlite3.connect(root / "open" / "index.sqlite3") as db:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("UPDATE documents SET updated_at = updated_at + 1")
        db.commit()
        shutil.copytree(root / "open", root / "live")
    db.close()
    assert (root / "live" / "index.sqlite3-wal").is_file()
    return root


def _no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr + result.stdout, result.stderr


@pytest.mark.slow
def test_read_only_data_dir_still_answers_status_search_ask_and_serve(
    built: Path, tmp_path: Path
) -> None:
    require_namespaces()
    mount = tmp_path / "ro"
    mount.mkdir()
    data = mount / "data"
    # Given a published index, and a copy of a live one, on a read-only file system
    setup = " && ".join(
        [
            mount_script(mount, size="64m", seed=built / "data"),
            f"cp -a {built / 'live'} {mount}/",
            f"mount -o remount,ro {mount}",
        ]
    )
    commands = [setup]
    for name in ("data", "live"):
        folder = mount / name
        commands += [
            f"{docchat('status', '--json', '--data-dir', folder)} > {tmp_path}/{name}-status.json",
            f"{docchat('search', 'repairs cost', '--json', '--data-dir', folder)}"
            f" > {tmp_path}/{name}-search.json",
            f"{docchat('ask', 'What did the repairs cost?', '--json', '--data-dir', folder)}"
            f" > {tmp_path}/{name}-ask.json",
        ]

    result = run_inside(" && ".join(commands))

    # Then reading works as on a writable disk
    assert result.returncode == 0, result.stderr
    _no_traceback(result)
    for name in ("data", "live"):
        status = json.loads((tmp_path / f"{name}-status.json").read_text())
        assert [d["status"] for d in status["documents"]] == ["INDEXED"]
        hits = json.loads((tmp_path / f"{name}-search.json").read_text())
        assert hits and "four million euros" in hits[0]["text"]
        answer = json.loads((tmp_path / f"{name}-ask.json").read_text())
        assert any(c["page"] == 2 for c in answer["citations"])

    # And the server answers reads, and refuses an upload with the JSON error shape
    server = ServerInside(setup, data)
    try:
        documents = server.http.get("/documents").json()["documents"]
        assert [d["status"] for d in documents] == ["INDEXED"]
        assert server.http.get("/health").status_code == 200
        upload = server.http.post(
            "/documents",
            params={"filename": "more.pdf"},
            content=NOTES,
            headers={"content-type": "application/pdf"},
        )
        assert upload.status_code == 409, upload.text
        assert "read-only" in upload.json()["error"]["message"]
    finally:
        err = server.stop()
    assert "Traceback" not in err, err


def test_damaged_index_is_named_with_what_to_do(built: Path, tmp_path: Path) -> None:
    # Given an index file that is not a database at all, and one damaged inside
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "index.sqlite3").write_bytes(b"this is not a database\n" * 400)
    torn = tmp_path / "torn"
    shutil.copytree(built / "data", torn)
    with sqlite3.connect(torn / "index.sqlite3") as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    raw = bytearray((torn / "index.sqlite3").read_bytes())
    page = 4096
    raw[page : len(raw)] = b"\xa5" * (len(raw) - page)  # every page after the header's
    (torn / "index.sqlite3").write_bytes(bytes(raw))

    for data in (garbage, torn):
        for command in (("status",), ("search", "repairs")):
            result = _cli(*command, "--data-dir", data)
            # Then the CLI says what happened and what to do, with no traceback
            _no_traceback(result)
            assert result.returncode == 2, (data, command, result.stdout)
            message = " ".join(result.stderr.split())
            assert "is damaged" in message and "ingest your PDFs again" in message, message


def test_damaged_index_answers_the_api_in_json(tmp_path: Path) -> None:
    import httpx

    from docchat.config import Settings
    from docchat.serve.app import create_app
    from docchat.wiring.local import served_local
    from tests.chatkit import ServedApp

    settings = Settings(data_dir=tmp_path)
    (tmp_path / "index.sqlite3").write_bytes(b"this is not a database\n" * 400)
    backend, uploads = served_local(settings)
    served = ServedApp(create_app(backend, uploads=uploads))
    served.start()
    try:
        documents = httpx.get(f"http://127.0.0.1:{served.port}/documents", timeout=30)
        assert documents.status_code == 500
        error = documents.json()["error"]
        assert error["code"] == "index_corrupt" and "is damaged" in error["message"]
        # /health reports the failed dependency (503: the adapter's readiness is /ready)
        health = httpx.get(f"http://127.0.0.1:{served.port}/health", timeout=30)
        assert health.status_code == 503
        failed = health.json()["error"]
        assert failed["checks"]["backend"]["code"] == "index_corrupt"
        assert "is damaged" in failed["message"]
        for said in (documents.text, health.text):
            assert str(tmp_path) not in said  # server paths stay in its log
    finally:
        served.stop()


@pytest.mark.slow
def test_full_disk_fails_one_file_keeps_the_index_and_stops_with_a_summary(
    tmp_path: Path,
) -> None:
    require_namespaces()
    first, more = tmp_path / "first", tmp_path / "more"
    first.mkdir()
    more.mkdir()
    (first / "notes.pdf").write_bytes(NOTES)
    lines = [
        ("body", f"Line {n} of the timetable: the boat to island {n} leaves at {n} past the hour.")
        for n in range(40)
    ]
    (more / "ferry.pdf").write_bytes(make_pdf([lines, lines[::-1], lines[::2]]))
    (more / "zoo.pdf").write_bytes(make_pdf([[("body", "Zebras graze.")]]))
    mount = tmp_path / "full"
    mount.mkdir()
    data = mount / "data"
    ingest_more = docchat("ingest", more, "--data-dir", data)
    # Given an index holding notes.pdf on a disk that then fills up
    script = " ; ".join(
        [
            mount_script(mount, size="2m"),
            docchat("ingest", first, "--data-dir", data) + " > /dev/null",
            f"dd if=/dev/zero of={mount}/filler bs=4k 2> /dev/null",
            f"truncate -s -64k {mount}/filler",  # room to open the index, not to add ferry.pdf
            f"{ingest_more} > {tmp_path}/full.txt 2> {tmp_path}/full.err",
            f"echo $? > {tmp_path}/full.rc",
            f"{docchat('status', '--json', '--data-dir', data)} > {tmp_path}/status.json",
            f"rm {mount}/filler",
            f"{ingest_more} > {tmp_path}/again.txt 2>&1",
            f"echo $? > {tmp_path}/again.rc",
        ]
    )

    result = run_inside(script)

    assert result.returncode == 0, result.stderr
    out = " ".join((tmp_path / "full.txt").read_text().split())
    err = (tmp_path / "full.err").read_text()
    assert "Traceback" not in out + err, err
    # Then the batch stops with a summary: the file that met the full disk failed with the
    # reason, the rest are named as not tried
    assert (tmp_path / "full.rc").read_text().strip() == "1"
    assert "ferry.pdf │ 0 │ 0 │ 0.00 │ FAILED (disk_full)" in out, out
    assert "the disk holding" in out and "is full" in out
    assert "stopped: the disk is full, so 1 file was not tried (zoo.pdf)" in out, out
    # And the index keeps what it had, whole
    status = json.loads((tmp_path / "status.json").read_text())
    assert [(Path(d["source"]).name, d["status"], d["chunks"]) for d in status["documents"]] == [
        ("notes.pdf", "INDEXED", 2)
    ]
    assert status["stats"]["chunks"] == 2
    # And once there is room, the same command indexes the rest
    assert (tmp_path / "again.rc").read_text().strip() == "0", (tmp_path / "again.txt").read_text()


@pytest.mark.slow
def test_full_disk_upload_leaves_no_partial_file_and_answers_in_json(tmp_path: Path) -> None:
    require_namespaces()
    mount = tmp_path / "full"
    mount.mkdir()
    server = ServerInside(mount_script(mount, size="400k"), mount / "data")
    try:
        # When a PDF larger than the free space is uploaded
        big = NOTES + b"%" + b"x" * 600_000 + b"\n"
        response = server.http.post(
            "/documents",
            params={"filename": "big.pdf"},
            content=big,
            headers={"content-type": "application/pdf"},
        )
        # Then the answer says the disk is full, in the JSON error shape
        assert response.status_code == 507, response.text
        assert "no space left" in response.json()["error"]["message"]
        # And nothing half-written is left
        files = server.inside("find", str(mount))
        assert ".partial" not in files and "big.pdf" not in files, files
        # And a small upload still goes through
        small = server.http.post(
            "/documents",
            params={"filename": "notes.pdf"},
            content=NOTES,
            headers={"content-type": "application/pdf"},
        )
        assert small.status_code == 202, small.text
    finally:
        err = server.stop()
    assert "Traceback" not in err, err


def test_a_file_name_that_is_not_utf8_is_indexed_with_the_rest_of_the_folder(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "pdfs"
    folder.mkdir()
    latin1 = bytes(folder) + b"/caf\xe9.pdf"
    with open(latin1, "wb") as handle:
        handle.write(NOTES)
    (folder / "zebra.pdf").write_bytes(
        make_pdf([[("body", "Zebras have black and white stripes.")]])
    )

    result = _cli("ingest", folder, "--data-dir", tmp_path / "data")

    _no_traceback(result)
    assert result.returncode == 0, result.stdout + result.stderr
    status = json.loads(_cli("status", "--json", "--data-dir", tmp_path / "data").stdout)
    names = {Path(d["source"]).name: d["status"] for d in status["documents"]}
    assert names == {"caf\\xe9.pdf": "INDEXED", "zebra.pdf": "INDEXED"}


def test_full_disk_at_the_final_flush_exits_non_zero_and_keeps_what_was_indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from docchat.adapters.sqlite_index import maintenance
    from docchat.cli import main

    # Given a disk that fills up as the ingest saves its last rows as a search segment
    folder, data = tmp_path / "pdfs", tmp_path / "data"
    folder.mkdir()
    (folder / "notes.pdf").write_bytes(NOTES)
    saved = maintenance.Segment.save

    def full(self: object, *args: object, **kwargs: object) -> object:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(maintenance.Segment, "save", full)

    # When it ends
    code = main(["ingest", str(folder), "--data-dir", str(data)])
    out = " ".join(capsys.readouterr().out.split())

    # Then it says the disk is full and exits 1, not 0 with a warning in the log
    assert code == 1, out
    assert "the disk holding" in out and "is full: every document indexed is kept" in out, out
    assert "stopped: the disk is full, what was indexed is kept" in out, out
    # And what was indexed is there once there is room
    monkeypatch.setattr(maintenance.Segment, "save", saved)
    assert main(["status", "--json", "--data-dir", str(data)]) == 0
    status = json.loads(capsys.readouterr().out)
    assert [(d["status"], d["chunks"]) for d in status["documents"]] == [("INDEXED", 2)]
    assert main(["search", "bridge reopens", "--data-dir", str(data)]) == 0
    assert "The bridge reopens on Monday" in capsys.readouterr().out
