"""Model files shipped inside pinned PyPI packages: found without importing the package, and
checked against their SHA-256 before first use (the local embedder's, the OCR engine's)."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

from docchat.errors import ModelFileError


def packaged_file(package: str, relative: str, *, hint: str) -> Path:
    """A data file inside an installed package; `hint` says how to install it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelFileError(f"package {package!r} is not installed: {hint}")
    return Path(next(iter(spec.submodule_search_locations))) / relative


def verified(path: Path, sha256: str, *, hint: str) -> Path:
    """`path`, after checking its SHA-256 against the pinned value."""
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise ModelFileError(f"cannot read model file {path} ({exc}): {hint}") from exc
    if digest != sha256:
        raise ModelFileError(
            f"model file {path} has SHA-256 {digest}, expected {sha256}: "
            f"the file is corrupt or not the pinned version; {hint}"
        )
    return path
