"""Writing result files safely: atomic replace, and never over a file smdlab did not write.

Each output folder keeps ``.smdlab-manifest.json``: file name -> SHA-256 of the content smdlab
wrote (a list of hashes while a file is being replaced). An existing file may be replaced only if
the manifest lists it with its current hash (smdlab wrote it and nobody changed it since), or with
``force``. The new hash is recorded before each file is replaced, so a run interrupted anywhere
leaves every file it wrote recognisable as smdlab's and a rerun can replace it.
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
# file name -> its hash, or the list of hashes it may hold while a write is under way
Manifest = dict[str, str | list[str]]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_manifest(folder: str | os.PathLike) -> Manifest:
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


def _hashes(entry: object) -> list[str]:
    """The hashes a manifest entry accepts (a hash, or a list of them while a write is under way)."""
    if isinstance(entry, str):
        return [entry]
    return [h for h in entry if isinstance(h, str)] if isinstance(entry, list) else []


def written_by_smdlab(path: Path, manifest: Manifest | None = None) -> bool:
    """True if ``path`` is a file smdlab wrote and nobody has changed since."""
    if manifest is None:
        manifest = read_manifest(path.parent)
    try:
        return path.is_file() and _sha(path.read_bytes()) in _hashes(manifest.get(path.name))
    except OSError:
        return False


def check_replaceable(path: Path, *, force: bool = False, manifest: Manifest | None = None) -> None:
    """Raise unless ``path`` is absent, or smdlab wrote it and it is unchanged, or ``force``."""
    if force or not path.exists():
        return
    if manifest is None:
        manifest = read_manifest(path.parent)
    try:
        if path.is_file() and _sha(path.read_bytes()) in _hashes(manifest.get(path.name)):
            return
    except OSError as exc:
        raise SmdlabError(
            f"cannot read {str(path)!r} to check it may be replaced: {exc.strerror or exc}"
        ) from exc
    raise SmdlabError(
        f"refusing to overwrite {str(path)!r}: smdlab did not write it (or it changed since); use --force to replace it"
    )


def write_files(
    folder: str | os.PathLike, files: Mapping[str, str | bytes], *, force: bool = False
) -> list[Path]:
    """Write ``files`` (name -> content) into ``folder``; refuse to replace foreign files unless ``force``."""
    out = Path(folder)
    if out.exists() and not out.is_dir():
        raise SmdlabError(f"output folder {str(out)!r} exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SmdlabError(
            f"cannot create output folder {str(out)!r}: {exc.strerror or exc}"
        ) from exc
    manifest = read_manifest(out)
    blobs = {name: (c.encode("utf-8") if isinstance(c, str) else c) for name, c in files.items()}
    for name in blobs:
        if Path(name).name != name or name == MANIFEST:
            raise SmdlabError(f"output file name must be a plain file name, got {name!r}")
        check_replaceable(out / name, force=force, manifest=manifest)

    def save(where: Path) -> None:
        try:
            atomic_write(
                out / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True).encode("utf-8")
            )
            if where != out / MANIFEST:
                atomic_write(where, blobs[where.name])
        except OSError as exc:
            raise SmdlabError(f"cannot write {str(where)!r}: {exc.strerror or exc}") from exc

    written = []
    for name, data in blobs.items():
        digest = _sha(data)
        # The new hash goes into the manifest before the file changes, next to the old one: whether
        # an interruption comes before, during or after the rename, the file holds a listed hash.
        manifest[name] = [*dict.fromkeys([*_hashes(manifest.get(name)), digest])]
        save(out / name)
        manifest[name] = digest
        written.append(out / name)
    save(out / MANIFEST)  # every entry down to the one hash each file now holds
    return written


def write_file(path: str | os.PathLike, content: str | bytes, *, force: bool = False) -> Path:
    """Write one file safely (see ``write_files``)."""
    p = Path(path)
    return write_files(p.parent if str(p.parent) else ".", {p.name: content}, force=force)[0]


class AppendedFile:
    """A file smdlab grows by appending, under the manifest rules at every step.

    Before each append the manifest lists the file's hash before and after it, so an interruption
    anywhere leaves a file a rerun recognises as smdlab's. Each append is flushed and synced.
    """

    def __init__(self, path: Path, *, force: bool = False) -> None:
        self.path = path
        self._sha = hashlib.sha256()
        data = path.read_bytes() if path.is_file() else b""
        # A run killed in the middle of an append leaves a whole earlier content and a torn last
        # line after it: still smdlab's file.
        whole = data[: data.rfind(b"\n") + 1]
        if force or _sha(whole) not in _hashes(read_manifest(path.parent).get(path.name)):
            check_replaceable(path, force=force)
        self._sha.update(data)

    def _record(self, *digests: str) -> None:
        self._manifest = read_manifest(
            self.path.parent
        )  # other files of the folder may have moved on
        self._manifest[self.path.name] = [*dict.fromkeys(digests)]
        try:
            atomic_write(
                self.path.parent / MANIFEST,
                json.dumps(self._manifest, indent=1, sort_keys=True).encode("utf-8"),
            )
        except OSError as exc:
            raise SmdlabError(f"cannot write {str(self.path)!r}: {exc.strerror or exc}") from exc

    def append(self, data: bytes) -> None:
        """Append ``data``, recording the new hash in the manifest first."""
        before = self._sha.hexdigest()
        after = self._sha.copy()
        after.update(data)
        self._record(before, after.hexdigest())
        try:
            with open(self.path, "ab") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            raise SmdlabError(f"cannot write {str(self.path)!r}: {exc.strerror or exc}") from exc
        self._sha = after

    def replace(self, data: bytes) -> None:
        """Replace the whole content (atomically, with the manifest rules of ``write_files``)."""
        ours = not self.path.exists() or _sha(self.path.read_bytes()) == self._sha.hexdigest()
        write_file(self.path, data, force=ours)
        self._sha = hashlib.sha256(data)
