"""Atomic file writing: a reader never sees a half-written file or folder.

The data goes to a temporary file (or folder) beside the destination, so the final rename stays on
one file system, and is renamed into place only once it is complete; on any failure the temporary
is removed and the destination is left as it was.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["copy_atomic", "replace_dir", "staging_dir", "write_atomic"]


def write_atomic(path: str | os.PathLike, data: bytes | str, *, prefix: str = ".tmp-") -> None:
    """Write ``data`` (``str`` is encoded as UTF-8) to ``path`` via a temporary file and rename.

    Parameters
    ----------
    path : path-like
        Destination; its folder must exist.
    data : bytes or str
        File contents.
    prefix : str
        Name prefix of the temporary file (a leading dot keeps it hidden).
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    if not isinstance(data, bytes):
        raise TypeError(f"data must be bytes or str, not {type(data).__name__}")
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=os.path.splitext(path)[1])
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def copy_atomic(src: str | os.PathLike, path: str | os.PathLike, *, prefix: str = ".tmp-") -> None:
    """Copy the file ``src`` to ``path`` via a temporary file and rename (folder must exist)."""
    path = os.fspath(path)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=prefix)
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


@contextlib.contextmanager
def staging_dir(parent: str | os.PathLike, *, prefix: str = ".tmp-") -> Iterator[Path]:
    """A temporary folder inside ``parent`` (created if missing), removed on leaving the block.

    Write the files of a document set into it, then move them into place with ``os.replace``
    or :func:`replace_dir`; whatever is left is removed, on success or failure.
    """
    parent = Path(parent)
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def replace_dir(tmp: str | os.PathLike, out: str | os.PathLike) -> None:
    """Put the complete folder ``tmp`` at ``out``, replacing any folder there."""
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    os.replace(tmp, out)
