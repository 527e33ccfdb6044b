"""Atomic file writing: a reader never sees a half-written file.

The data goes to a temporary file in the destination's folder (so the final rename stays on one
file system) and is renamed into place only once it is complete; on any failure the temporary
file is removed and the destination is left as it was.
"""

from __future__ import annotations

import os
import tempfile


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


__all__ = ["write_atomic"]
