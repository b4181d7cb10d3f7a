"""Page images -> text lines (rapidocr on onnxruntime, with the ONNX models its wheel ships).

Nothing is downloaded: rapidocr is given the paths of the three model files inside its own
installed package, checked against pinned SHA-256s first, so its download code is never reached.
rapidocr (Apache-2.0) and the PaddleOCR PP-OCRv6 / PP-OCR v2 models it carries (Apache-2.0, see
the wheel's MODEL_LICENSES.md) come from `requirements/ocr.txt`, pinned with hashes.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from docchat.errors import ModelFileError, OcrError
from docchat.modelfiles import packaged_file, verified

RAPIDOCR_VERSION = "3.10.0"
INSTALL_HINT = (
    f"install the OCR engine with `make install` (pip install --require-hashes -r "
    f"requirements/ocr.txt: rapidocr=={RAPIDOCR_VERSION})"
)
# The models of rapidocr 3.10.0's wheel (rapidocr/models/), by role: det finds text lines,
# cls turns upside-down lines, rec reads them. The hashes are the files' own.
MODELS = {
    "Det": (
        "models/PP-OCRv6_det_small.onnx",
        "090f04abcd9d9a7498bc4ebf677e4cb9bdce1fe4197ddb7e529f1ef44e1ff94f",
    ),
    "Cls": (
        "models/ch_ppocr_mobile_v2.0_cls_mobile.onnx",
        "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c",
    ),
    "Rec": (
        "models/PP-OCRv6_rec_small.onnx",
        "6f327246b50388f3c176ae304bd95767ea6dc0c9ae92153ef8cbe210b3c14884",
    ),
}
Image = NDArray[np.uint8]
# Larger images are read in overlapping tiles of at most TILE**2 pixels: detection needs ~200
# bytes per pixel (a 2000 px square peaks near 900 MiB, a 4000 px one beyond the conversion's
# 2 GiB cap). Tiles are full width up to 2 * TILE, so a line lies whole in some tile unless it is
# longer than that; a letter page at 150 DPI (1275 x 1650 px) is one tile.
TILE = 1600
OVERLAP = 256


@dataclass(frozen=True)
class OcrOptions:
    """How pages are rendered for OCR. The DPI was chosen with bench/ocr.py: word recall stops
    improving above it while time keeps growing; `max_pixels` caps a huge page's render."""

    dpi: int = 150
    max_pixels: int = 16_000_000
    threads: int = 0  # onnxruntime's intra-op threads; 0 lets it choose


@dataclass(frozen=True)
class OcrLine:
    """One recognised line and its box in image pixels (top-left origin)."""

    text: str
    left: float
    top: float
    right: float
    bottom: float
    score: float


def available() -> bool:
    """Whether the OCR engine is installed (without loading it)."""
    return importlib.util.find_spec("rapidocr") is not None


def _model_paths() -> dict[str, str]:
    found: dict[str, str] = {}
    for role, (relative, sha256) in MODELS.items():
        try:
            path = packaged_file("rapidocr", relative, hint=INSTALL_HINT)
        except ModelFileError as exc:
            raise ModelFileError(f"the OCR engine is not installed: {INSTALL_HINT}") from exc
        found[role] = str(verified(path, sha256, hint=INSTALL_HINT))
    return found


class OcrEngine:
    """rapidocr with the wheel's verified models, loaded on first use."""

    def __init__(self, *, threads: int = 0) -> None:
        self._threads = threads
        #: Read a line the classifier turned upside down both ways (`_read`); bench/ocr.py
        #: turns it off for its baseline.
        self.recheck_flips = True
        self._engine: Any = None
        self._lock = threading.Lock()

    def _rapidocr(self) -> Any:
        with self._lock:
            if self._engine is None:
                self._engine = _load(self._threads)
            return self._engine

    def lines(self, image: Image) -> list[OcrLine]:
        """The text lines found in `image` (H x W, or H x W x 3 BGR), top to bottom."""
        if image.size == 0 or min(image.shape[:2]) < 8:
            return []
        height, width = image.shape[:2]
        columns = _spans(width, _count(width, 2 * TILE))
        tile_width = columns[0].end - columns[0].start
        rows = _spans(height, _count(height, min(TILE * TILE // tile_width, 2 * TILE)))
        lines = []
        for row in rows:
            for column in columns:
                tile = image[row.start : row.end, column.start : column.end]
                for line in self._tile_lines(tile, column.start, row.start):
                    x, y = (line.left + line.right) / 2, (line.top + line.bottom) / 2
                    if column.low <= x < column.high and row.low <= y < row.high:
                        lines.append(line)
        return reading_order(lines)

    def _tile_lines(self, tile: Image, left: int, top: int) -> list[OcrLine]:
        try:
            found = _read(self._rapidocr(), tile, recheck_flips=self.recheck_flips)
        except ModelFileError:
            raise
        except Exception as exc:  # onnxruntime's own errors: a failed allocation is the one seen
            if "bad_alloc" in str(exc):
                raise MemoryError(str(exc)) from exc
            raise OcrError(f"the OCR engine failed: {str(exc).strip().splitlines()[-1]}") from exc
        lines = []
        for box, text, score in found:
            xs, ys = box[:, 0] + left, box[:, 1] + top
            lines.append(
                OcrLine(
                    text,
                    float(xs.min()),
                    float(ys.min()),
                    float(xs.max()),
                    float(ys.max()),
                    float(score),
                )
            )
        return lines


def _read(rapid: Any, image: Image, *, recheck_flips: bool) -> list[tuple[Any, str, float]]:
    """(box, text, score) of each line rapidocr reads in `image`: its own steps, as its
    `__call__` runs them in 3.10.0 (detect, turn, recognise), except that a line its classifier
    turned upside down is read both ways and keeps the reading the recogniser is surer of.

    The classifier sees a line squeezed into 192 x 48 pixels (rapidocr's `cls_image_shape`),
    so a long line of print is a smear to it, and it turns clean, upright lines often enough:
    at 150 DPI a few per page of body text, which the recogniser then reads as "er ou o aer
    os es" (or as nothing, under its score threshold). A page scanned upside down is still
    read right: there the turned reading is the surer one.
    """
    from rapidocr.main import RapidOCRError
    from rapidocr.utils.process_img import map_boxes_to_original

    original = rapid.load_img(image)
    resized, record = rapid.preprocess_img(original)
    try:
        crops, found = rapid.detect_and_crop(resized, record)
    except RapidOCRError:  # it found no text
        return []
    turned = rapid.cls_and_rotate(crops)[1]
    threshold = rapid.cfg.Cls.cls_thresh
    flipped = [i for i, (label, p) in enumerate(turned.cls_res) if "180" in label and p > threshold]
    read = rapid.recognize_txt(turned.img_list)
    texts, scores = list(read.txts), [float(p) for p in read.scores]
    if recheck_flips and flipped:
        upright = rapid.recognize_txt([crops[i] for i in flipped])
        for i, text, score in zip(flipped, upright.txts, upright.scores, strict=True):
            if float(score) > scores[i]:
                texts[i], scores[i] = text, float(score)
    height, width = original.shape[:2]
    boxes = map_boxes_to_original(found.boxes, record, height, width)
    return [
        (box, str(text).strip(), score)
        for box, text, score in zip(boxes, texts, scores, strict=True)
        if str(text).strip() and score >= rapid.text_score
    ]


def reading_order(lines: list[OcrLine]) -> list[OcrLine]:
    """Rows top to bottom, each left to right: a line whose middle lies within the height of a
    row's first line is on that row, however a skewed scan tilts their tops."""
    rows: list[list[OcrLine]] = []
    for line in sorted(lines, key=lambda line: (line.top, line.left)):
        middle = (line.top + line.bottom) / 2
        if rows and rows[-1][0].top <= middle <= rows[-1][0].bottom:
            rows[-1].append(line)
        else:
            rows.append([line])
    return [line for row in rows for line in sorted(row, key=lambda line: line.left)]


@dataclass(frozen=True)
class _Span:
    """A tile's extent along one side, and the part of it whose lines it reads (`low` to
    `high`): the middle of each overlap divides the two tiles that share it."""

    start: int
    end: int
    low: float
    high: float


def _count(size: int, longest: int) -> int:
    """How many tiles of at most `longest` pixels, overlapping by OVERLAP, cover `size`."""
    if size <= longest:
        return 1
    return math.ceil((size - OVERLAP) / (longest - OVERLAP))


def _spans(size: int, count: int) -> list[_Span]:
    """`count` tiles of equal length along a side of `size` pixels, overlapping by OVERLAP."""
    length = math.ceil((size + (count - 1) * OVERLAP) / count)
    starts = [round(i * (size - length) / (count - 1)) if count > 1 else 0 for i in range(count)]
    ends = [start + length for start in starts]
    return [
        _Span(
            start,
            end,
            (start + ends[i - 1]) / 2 if i else 0.0,
            (end + starts[i + 1]) / 2 if i + 1 < count else float(size),
        )
        for i, (start, end) in enumerate(zip(starts, ends, strict=True))
    ]


def _load(threads: int) -> Any:
    paths = _model_paths()
    try:
        from rapidocr import RapidOCR
    except ImportError as exc:
        raise ModelFileError(f"the OCR engine is not installed: {INSTALL_HINT}") from exc
    # rapidocr logs every model it loads at INFO through its own handler.
    logging.getLogger("RapidOCR").setLevel(logging.ERROR)
    params: dict[str, Any] = {
        "Global.log_level": "error",
        # rapidocr shrinks images to 2000 px on the long side by default, where the tiny print
        # of a huge page is lost: it gets tiles no larger than TILE instead.
        "Global.max_side_len": 2 * TILE,
        **{f"{role}.model_path": path for role, path in paths.items()},
    }
    if threads > 0:
        params["EngineConfig.onnxruntime.intra_op_num_threads"] = threads
    return RapidOCR(params=params)


_ENGINES: dict[int, OcrEngine] = {}


def engine(*, threads: int = 0) -> OcrEngine:
    """One engine per process (and thread count): loading the models takes a second or two."""
    if threads not in _ENGINES:
        _ENGINES[threads] = OcrEngine(threads=threads)
    return _ENGINES[threads]
