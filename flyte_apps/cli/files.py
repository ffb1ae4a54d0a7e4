"""Local files the CLI reads and writes, handled as untrusted: a fork's pull request controls the
stack files and may leave symlinks, FIFOs or devices where files belong.

- :func:`read_regular` opens a file without blocking and reads it only if it is a regular file (a
  FIFO or ``/dev/stdin`` would hang the command), at most a bounded number of bytes;
- :func:`write_atomically` replaces a file in one rename, and a symlinked file's *target*, so that
  the link stays a link (a stack file shared between directories);
- :func:`write_owned` writes a directory of generated files and removes only what it wrote before,
  as its manifest (:data:`MANIFEST`) records by name and content, and never writes through a
  symlink.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

MANIFEST: Final = ".flyte-apps-render"
"""What ``render --out-dir`` wrote into a directory, as JSON: ``{"files": {name: sha256 of its
content}}``. Named without ``.json``: ``kubectl apply -f DIR`` reads every ``.json``/``.yaml``/``.yml``."""
_MANIFEST_FILES: Final = "files"
_OPEN_FLAGS: Final = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
"""Opening a FIFO for reading without a writer blocks, unless non-blocking; a terminal must not
become the controlling one."""


class NotRegularFile(OSError):
    """The path names something other than a regular file (a FIFO, a device, a directory)."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_regular(path: Path, *, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of ``path`` (a caller tells "over the bound" by the length), if
    it is a regular file (a symlink to one is one); :class:`NotRegularFile` otherwise, or the
    ``OSError`` of opening it (``FileNotFoundError``, ``PermissionError``)."""
    descriptor = os.open(path, _OPEN_FLAGS)
    try:
        mode = os.fstat(descriptor).st_mode
    except BaseException:
        os.close(descriptor)
        raise
    if not stat.S_ISREG(mode):
        os.close(descriptor)
        msg = f"is {_kind(mode)}, not a regular file"
        raise NotRegularFile(msg)
    with os.fdopen(descriptor, "rb") as stream:
        return stream.read(limit + 1)


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to a temp file beside the file, then rename it over the file, keeping its mode.
    A symlink is followed: its target is replaced and the link stays."""
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    handle, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        if target.exists():
            os.chmod(temp, target.stat().st_mode & 0o777)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


class OwnedFileRefused(Exception):
    """A name :func:`write_owned` must write is taken by something it will not replace."""


@dataclass
class OwnedWrite:
    """What :func:`write_owned` did: files written (in order), removed, and left alone with why."""

    written: list[Path] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    """``NAME: why`` for each file named like ours that was not removed."""


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _lstat_mode(path: Path) -> int | None:
    try:
        return path.lstat().st_mode
    except FileNotFoundError:
        return None


def _previous(directory: Path) -> dict[str, str]:
    """The manifest's ``{name: digest}``; empty when there is none (or it is not ours to read)."""
    manifest = directory / MANIFEST
    mode = _lstat_mode(manifest)
    if mode is None:
        return {}
    if not stat.S_ISREG(mode):
        msg = f"{manifest} is {'a symlink' if stat.S_ISLNK(mode) else _kind(mode)}; remove it"
        raise OwnedFileRefused(msg)
    try:
        recorded = json.loads(read_regular(manifest, limit=2**20))
        files = recorded[_MANIFEST_FILES]
    except (ValueError, TypeError, KeyError) as exc:
        msg = f"{manifest} is not a manifest render wrote ({type(exc).__name__}); remove it"
        raise OwnedFileRefused(msg) from None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        msg = f"{manifest} is not a manifest render wrote; remove it"
        raise OwnedFileRefused(msg)
    return {str(name): str(digest) for name, digest in files.items() if "/" not in str(name)}


def write_owned(directory: Path, files: Mapping[str, str], *, looks_ours: re.Pattern[str]) -> OwnedWrite:
    """Write ``files`` (name to text) into ``directory``, each in one rename, then remove the files
    the previous run recorded that this one does not write, if their content is still what was
    written. Refuses (:class:`OwnedFileRefused`, before writing anything) when a name is taken by a
    symlink or anything but a regular file. Files named like ours (``looks_ours``) that no manifest
    records, or that changed since, are left, and said so in :attr:`OwnedWrite.left`."""
    previous = _previous(directory)
    for name in files:
        mode = _lstat_mode(directory / name)
        if mode is not None and not stat.S_ISREG(mode):
            what = "a symlink" if stat.S_ISLNK(mode) else _kind(mode)
            msg = f"{directory / name} is {what}; render writes only regular files of its own: remove it"
            raise OwnedFileRefused(msg)
    result = OwnedWrite()
    for name, text in files.items():
        path = directory / name
        write_atomically(path, text)
        result.written.append(path)
    for name, digest in sorted(previous.items()):
        path = directory / name
        if name in files or _lstat_mode(path) is None:
            continue
        if not path.is_file() or path.is_symlink():
            result.left.append(f"{name}: no longer the regular file render wrote")
        elif _digest(path.read_bytes()) != digest:
            result.left.append(f"{name}: changed since render wrote it")
        else:
            path.unlink()
            result.removed.append(path)
    for entry in sorted(directory.iterdir()):
        if looks_ours.match(entry.name) and entry.name not in files and entry.name not in previous:
            result.left.append(f"{entry.name}: not written by render (no record of it in {MANIFEST})")
    recorded = {name: _digest(text.encode("utf-8")) for name, text in files.items()}
    manifest = json.dumps({_MANIFEST_FILES: recorded}, indent=2, sort_keys=True) + "\n"
    write_atomically(directory / MANIFEST, manifest)
    return result
