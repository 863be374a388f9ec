"""Writing result files safely: atomic replace, and never over a file smdlab did not write.

Each output folder keeps ``.smdlab-manifest.json``: file name -> SHA-256 of the content smdlab
wrote. An existing file may be replaced only if the manifest lists it with its current hash
(smdlab wrote it and nobody changed it since), or with ``force``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from smdlab.errors import SmdlabError

MANIFEST = ".smdlab-manifest.json"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_manifest(folder: str | os.PathLike) -> dict[str, str]:
    """The manifest of ``folder`` (file name -> SHA-256 smdlab wrote); empty if missing or unreadable."""
    folder = Path(folder)
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return {}  # unreadable: nothing counts as ours, so nothing existing is replaced
    return data if isinstance(data, dict) else {}


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename."""
    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    # Mode 0o666 less the umask, as a plain open() would give (mkstemp's 0o600 hid results from others).
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())  # the bytes are on disk before the name points at them
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def check_replaceable(path: Path, *, force: bool = False, manifest: dict[str, str] | None = None) -> None:
    """Raise unless ``path`` is absent, or smdlab wrote it and it is unchanged, or ``force``."""
    if force or not path.exists():
        return
    if manifest is None:
        manifest = read_manifest(path.parent)
    try:
        if path.is_file() and manifest.get(path.name) == _sha(path.read_bytes()):
            return
    except OSError as exc:
        raise SmdlabError(f"cannot read {str(path)!r} to check it may be replaced: {exc.strerror or exc}") from exc
    raise SmdlabError(
        f"refusing to overwrite {str(path)!r}: smdlab did not write it (or it changed since); use --force to replace it"
    )


def write_files(folder: str | os.PathLike, files: Mapping[str, str | bytes], *, force: bool = False) -> list[Path]:
    """Write ``files`` (name -> content) into ``folder``; refuse to replace foreign files unless ``force``."""
    out = Path(folder)
    if out.exists() and not out.is_dir():
        raise SmdlabError(f"output folder {str(out)!r} exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SmdlabError(f"cannot create output folder {str(out)!r}: {exc.strerror or exc}") from exc
    manifest = read_manifest(out)
    blobs = {name: (c.encode("utf-8") if isinstance(c, str) else c) for name, c in files.items()}
    for name in blobs:
        if Path(name).name != name or name == MANIFEST:
            raise SmdlabError(f"output file name must be a plain file name, got {name!r}")
        check_replaceable(out / name, force=force, manifest=manifest)
    written = []
    for name, data in blobs.items():
        try:
            atomic_write(out / name, data)
            manifest[name] = _sha(data)
            # Recorded as soon as it exists: a run interrupted before the next file can still replace it.
            atomic_write(out / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True).encode("utf-8"))
        except OSError as exc:
            raise SmdlabError(f"cannot write {str(out / name)!r}: {exc.strerror or exc}") from exc
        written.append(out / name)
    return written


def write_file(path: str | os.PathLike, content: str | bytes, *, force: bool = False) -> Path:
    """Write one file safely (see ``write_files``)."""
    p = Path(path)
    return write_files(p.parent if str(p.parent) else ".", {p.name: content}, force=force)[0]
