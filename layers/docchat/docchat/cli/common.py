"""What every `docchat` command shares: the two consoles, the index a command opens (closed
when it ends), and the checks and words of more than one command."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeAlias, TypeVar

from rich.console import Console

from docchat.adapters.sqlite_index import SqliteIndex
from docchat.cli.display import shown
from docchat.config import Settings
from docchat.errors import DocchatError, IndexMissingError
from docchat.ingest.local import source_of
from docchat.wiring.local import local_embedder, open_index

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False)
# Wrapped between words in a terminal; one line each where stderr is a pipe or a log file, so
# that a path or an id in an error stays whole (rich would break it at 80 columns).
err.soft_wrap = not err.is_terminal

MAX_TOP_K = 50
#: The `docchat` command's subcommands, to which each module adds its own.
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


class Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=Closable)


class Opened:
    """The indexes one command opened, closed when it ends (not when the garbage collector gets
    to them: a caller that runs commands in one process, as the tests do, may copy the data
    directory next, and a late close checkpoints and deletes the WAL file under it). Each run
    of a command is given its own (`commands.run`)."""

    def __init__(self) -> None:
        self._indexes: list[Closable] = []

    def closed_later(self, index: C) -> C:
        """`index` (or another file the command opened), to be closed when the command ends."""
        self._indexes.append(index)
        return index

    def close(self) -> None:
        """Close every index the command opened, the last first."""
        while self._indexes:
            self._indexes.pop().close()

    def __enter__(self) -> Opened:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


#: What a command runs: its arguments, the settings, and where it leaves what it opened.
Run: TypeAlias = Callable[[argparse.Namespace, Settings, Opened], int]


def require_index(settings: Settings) -> None:
    """Reading never creates a data directory: the index must be there already."""
    if not settings.index_path.exists():
        raise IndexMissingError(
            f"there is no docchat index in {settings.data_dir}: check --data-dir (or "
            "DOCCHAT_DATA_DIR), or add documents first with `docchat ingest`"
        )


def existing_index(settings: Settings, opened: Opened) -> SqliteIndex:
    """The data directory's index, which must exist (closed when the command ends)."""
    require_index(settings)
    return opened.closed_later(open_index(settings, local_embedder(settings)))


def top_k(value: str) -> int:
    """--top-k: a whole number of passages from 1 to MAX_TOP_K."""
    try:
        number = int(value)
    except ValueError:
        number = 0
    if not 1 <= number <= MAX_TOP_K:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a number of passages: give a whole number from 1 to {MAX_TOP_K}"
        )
    return number


def plural(count: int, word: str) -> str:
    """ "1 chunk", "2 chunks"."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def name_of(path: Path | str) -> str:
    """A file's name as it can be stored and printed, whatever bytes the name has."""
    return Path(source_of(Path(path))).name if isinstance(path, Path) else Path(path).name


def shown_name(path: Path | str) -> str:
    """A file's name as the terminal shows it (no control acts on the terminal or the text)."""
    return shown(name_of(path))


def question(text: str, *, what: str) -> str:
    """`text`, which must say something."""
    if not text.strip():
        raise DocchatError(f"the {what} is empty: say what to look for in the documents")
    return text
