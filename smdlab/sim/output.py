"""Writing result files safely: atomic replace, and never over a file smdlab did not write.

Each output folder keeps ``.smdlab-manifest.json``: file name -> SHA-256 of the content smdlab
wrote. An existing file may be replaced only if the manifest lists it with its current hash
(smdlab wrote it and nobody changed it since), or with ``force``.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from smdlab.errors import SmdlabError

MANIFEST = ".smdlab-manifest.json"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_manifest(folder: Path) -> dict[str, str]:
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def check_replaceable(path: Path, *, force: bool = False, manifest: dict[str, str] | None = None) -> None:
    """Raise unless ``path`` is absent, or smdlab wrote it and it is unchanged, or ``force``."""
    if force or not path.exists():
        return
    if manifest is None:
        manifest = _read_manifest(path.parent)
    if path.is_file() and manifest.get(path.name) == _sha(path.read_bytes()):
        return
    raise SmdlabError(
        f"refusing to overwrite {str(path)!r}: smdlab did not write it (or it changed since); use --force to replace it"
    )


def write_files(folder: str | os.PathLike, files: Mapping[str, str | bytes], *, force: bool = False) -> list[Path]:
    """Write ``files`` (name -> content) into ``folder``; refuse to replace foreign files unless ``force``."""
    out = Path(folder)
    if out.exists() and not out.is_dir():
        raise SmdlabError(f"output folder {str(out)!r} exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    manifest = _read_manifest(out)
    blobs = {name: (c.encode("utf-8") if isinstance(c, str) else c) for name, c in files.items()}
    for name in blobs:
        if Path(name).name != name or name == MANIFEST:
            raise SmdlabError(f"output file name must be a plain file name, got {name!r}")
        check_replaceable(out / name, force=force, manifest=manifest)
    written = []
    for name, data in blobs.items():
        atomic_write(out / name, data)
        manifest[name] = _sha(data)
        written.append(out / name)
    atomic_write(out / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True).encode("utf-8"))
    return written


def write_file(path: str | os.PathLike, content: str | bytes, *, force: bool = False) -> Path:
    """Write one file safely (see ``write_files``)."""
    p = Path(path)
    return write_files(p.parent if str(p.parent) else ".", {p.name: content}, force=force)[0]
