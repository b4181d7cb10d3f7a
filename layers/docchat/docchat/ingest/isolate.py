"""Convert a PDF in a child process: a file that crashes, hangs or floods memory in the PDF
engine costs that child, never the caller (the CLI's ingest run, a Lambda invocation).

The child is never forked from the caller: `docchat serve` runs threads, and a lock one of them
holds at fork time (a logging handler's, an import lock) stays held forever in a forked child.
Children come from a forkserver instead, a single-threaded process started once (fork + exec) that
has already imported the PDF engine. It talks to the caller over a Unix socket in the temporary
directory and one-way pipes: no /dev/shm, which Lambda lacks, so multiprocessing's Queue, Pool and
locks fail there while Process and Pipe work
(https://aws.amazon.com/blogs/compute/parallel-processing-in-python-with-aws-lambda/).
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from multiprocessing import forkserver
from multiprocessing.connection import Connection
from multiprocessing.context import ForkContext, ForkServerContext, SpawnContext
from typing import Any, Literal

from docchat.errors import (
    ConfigError,
    ConversionCrashedError,
    ConversionTimeoutError,
    CorruptFileError,
    DocchatError,
    MalformedPdfError,
    PdfTooLargeError,
)
from docchat.ingest.convert.pageocr import ocr_pages
from docchat.ingest.convert.pdf import ConvertLimits, PageOcr, ProgressFn, pages_from_pdf
from docchat.ingest.ocr import OcrOptions
from docchat.models import ConvertedDocument, OcrPage

MIB = 1024 * 1024
# The engine's own deadline stops between pages; this one also stops a page that never ends.
GRACE_S = 5.0
DEFAULT_LIMITS = ConvertLimits()
START_METHOD: Literal["forkserver", "spawn", "fork"] = "forkserver"
# Imported once in the forkserver, so a conversion's child starts with the PDF engine loaded, and
# re-running the caller's main script (as every child does first; Python 3.11's forkserver never
# preloads `__main__` itself) finds the `docchat` command's imports done: half a second a file.
PRELOAD = [
    "docchat.ingest.convert.pdf",
    "docchat.ingest.convert.pageocr",
    "docchat.ingest.formats",
    "docchat.cli",
]


def pages_from_pdf_isolated(
    data: bytes,
    *,
    fallback_title: str = "",
    limits: ConvertLimits = DEFAULT_LIMITS,
    ocr: PageOcr | None = None,
    memory_mib: int = 2048,
    on_page: ProgressFn | None = None,
) -> ConvertedDocument:
    """`pages_from_pdf` in a child process with a memory cap and a hard deadline."""
    # The converter goes by reference (module and name), so the child runs what this module's
    # `pages_from_pdf` is now.
    work = partial(pages_from_pdf, data, fallback_title=fallback_title, limits=limits, ocr=ocr)
    outcome = _run_isolated(
        work, timeout_s=limits.timeout_s, memory_mib=memory_mib, on_page=on_page
    )
    assert isinstance(outcome, ConvertedDocument)
    return outcome


def document_isolated(
    name: str, data: bytes, *, timeout_s: float, memory_mib: int
) -> ConvertedDocument:
    """An Office, HTML, Markdown or text file converted (docchat.ingest.formats) in a child
    process with a memory cap and a hard deadline: a zip bomb that slipped past the checks, or
    a library stuck on a hostile file, costs the child."""
    work = partial(_document, name, data)
    outcome = _run_isolated(work, timeout_s=timeout_s, memory_mib=memory_mib, on_page=None)
    assert isinstance(outcome, ConvertedDocument)
    return outcome


def _document(name: str, data: bytes) -> ConvertedDocument:
    """`formats.convert`, with anything untyped it raises worded as a damaged file, but for a
    module the installation lacks (make sam-local found a function built without its Office
    reader told to save the file again)."""
    from docchat.ingest import formats

    try:
        return formats.convert(name, data)
    except (DocchatError, MemoryError):
        raise
    except ImportError as exc:
        # Not the file's fault: the installation (a function's requirements) lacks a reader.
        raise ConfigError(
            f"reading {name!r} needs the Python module {exc.name or exc}, which this "
            "installation lacks: install it (for a Lambda function, add it to the function's "
            "requirements and build again); the file itself may be fine"
        ) from exc
    except Exception as exc:
        raise CorruptFileError(
            f"{name!r} could not be read ({type(exc).__name__}: {exc}): open it in its "
            "application, save it again and upload that"
        ) from exc


def ocr_pages_isolated(
    data: bytes,
    numbers: list[int],
    *,
    options: OcrOptions,
    timeout_s: float,
    memory_mib: int,
) -> list[OcrPage]:
    """`ocr_pages` in a child process with a memory cap and a hard deadline (the cloud's OCR
    step: a hostile scan costs the child, and its failure is a typed error)."""
    work = partial(ocr_pages, data, numbers, options=options)
    outcome = _run_isolated(work, timeout_s=timeout_s, memory_mib=memory_mib, on_page=None)
    assert isinstance(outcome, list)
    return outcome


def _run_isolated(
    work: Callable[..., Any], *, timeout_s: float, memory_mib: int, on_page: ProgressFn | None
) -> Any:
    context = _context()
    receive, send = context.Pipe(duplex=False)
    child = context.Process(
        target=_convert_in_child,
        args=(send, work, memory_mib, on_page is not None),
        daemon=True,
    )
    child.start()
    send.close()
    deadline = time.monotonic() + timeout_s + GRACE_S
    outcome: Any = None
    try:
        while True:
            if not receive.poll(max(deadline - time.monotonic(), 0)):
                raise ConversionTimeoutError(
                    f"conversion did not finish within {timeout_s:g} s "
                    "(DOCCHAT_CONVERT_TIMEOUT_S): split the document or raise the limit"
                )
            outcome = receive.recv()
            if not isinstance(outcome, _Progress):
                break
            if on_page:
                on_page(outcome.done, outcome.total)
    except EOFError:
        outcome = None
    finally:
        receive.close()
        if child.is_alive():
            child.kill()
        child.join(5)
    if isinstance(outcome, Exception):
        raise outcome
    if outcome is None:
        raise _crashed(child.exitcode, memory_mib)
    return outcome


def _context() -> ForkServerContext | SpawnContext | ForkContext:
    if START_METHOD == "spawn":
        return multiprocessing.get_context("spawn")
    # A forkserver's or spawned child first re-runs the caller's main script: in Lambda that is
    # the runtime's bootstrap, whose loop would take the next invocation inside the child. A
    # Lambda process runs one invocation at a time, no other thread of ours: fork is safe there.
    # https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime
    if START_METHOD == "fork" or os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        return multiprocessing.get_context("fork")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    _start_forkserver()
    return context


def _start_forkserver() -> None:
    """Start the forkserver ignoring SIGINT, a disposition it and every child it forks inherit.
    Ctrl-C reaches the terminal's whole process group: the forkserver, importing PRELOAD in its
    first second, and a child converting printed a KeyboardInterrupt traceback each under the
    command's own "interrupted". The caller stops its children itself (_run_isolated kills the
    one it waits for; the forkserver ends when the caller does)."""
    if threading.current_thread() is not threading.main_thread():
        return  # only the main thread may set a handler; the first Process starts it instead
    ignored = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        forkserver.ensure_running()
    finally:
        signal.signal(signal.SIGINT, ignored)


def _crashed(exitcode: int | None, memory_mib: int) -> Exception:
    if exitcode is not None and exitcode < 0:
        name = signal.Signals(-exitcode).name
        return ConversionCrashedError(
            f"the PDF crashed the PDF engine ({name}): re-export or repair the file"
        )
    return _too_large(memory_mib)


def _too_large(memory_mib: int) -> PdfTooLargeError:
    return PdfTooLargeError(
        f"converting the PDF needs more than {memory_mib} MiB of memory: split the document"
    )


@dataclass(frozen=True)
class _Progress:
    done: int
    total: int


def _convert_in_child(
    send: Connection,
    work: Callable[..., Any],
    memory_mib: int,
    report: bool,
) -> None:
    _limit_memory(memory_mib)
    outcome: Any
    try:
        if report:
            outcome = work(on_page=lambda done, total: send.send(_Progress(done, total)))
        else:
            outcome = work()
    except MemoryError:
        outcome = _too_large(memory_mib)
    except DocchatError as exc:  # the parent re-raises typed errors as they are
        outcome = exc if _picklable(exc) else ConversionCrashedError(str(exc))
    except Exception as exc:  # the engine refusing the file ("Crop exceeds page dimensions")
        outcome = MalformedPdfError(
            f"the PDF could not be read ({type(exc).__name__}: {exc}): re-export or repair "
            "the file, then upload it again"
        )
    try:
        send.send(outcome)
    finally:
        send.close()
        os._exit(0)  # skip the parent's atexit handlers and buffered output in the child


def _limit_memory(memory_mib: int) -> None:
    """Allow `memory_mib` of address space beyond what the child already maps."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = _mapped_bytes() + memory_mib * MIB
    if hard == resource.RLIM_INFINITY or cap < hard:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def _mapped_bytes() -> int:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _picklable(exc: Exception) -> bool:
    import pickle

    try:
        pickle.dumps(exc)
    except Exception:
        return False
    return True
