"""Reading the JSON documents a user hands the toolkit (unit costs, synthesis reports,
statistics, checkpoints, slices, manifests).

One reader so that every file gets the same checks and messages: a directory, a missing file,
a gzip or other binary file, bad JSON, and numbers JSON does not have (``NaN``, ``Infinity``,
or a literal too large for a float, such as ``1e400``, which Python's own reader turns into
infinity) each name the file and what was expected.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator
from pathlib import Path

__all__ = ["GZIP_MAGIC", "loads", "naming", "read_json"]

#: The first two bytes of every gzip stream (RFC 1952).
GZIP_MAGIC = b"\x1f\x8b"


def _constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


def loads(text: str) -> object:
    """``json.loads`` that refuses ``NaN``, ``Infinity`` and numbers beyond a float's range.

    Raises
    ------
    ValueError
        Bad JSON or such a number (``json.JSONDecodeError`` for bad JSON); nesting too deep.
    """
    try:
        return json.loads(text, parse_constant=_constant, parse_float=_float)
    except RecursionError:
        raise ValueError("the document is nested too deeply") from None


def read_json(path: str | Path, what: str) -> object:
    """The decoded JSON document in ``path``.

    Parameters
    ----------
    path : str or Path
        The file.
    what : str
        What the file is, for messages (``"unit-cost file"``, ``"statistics file"`` ...).

    Raises
    ------
    IsADirectoryError
        ``path`` is a directory.
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        The file is gzip-compressed, not UTF-8 text, not valid JSON, or holds a number JSON
        does not have (:func:`loads`); the message names it.
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{what} {str(path)!r} is a directory, not a JSON file")
    if not path.is_file():
        raise FileNotFoundError(f"{what} {str(path)!r} does not exist")
    raw = path.read_bytes()
    if raw.startswith(GZIP_MAGIC):
        raise ValueError(
            f"{what} {path.name} is gzip-compressed; expected a JSON text file "
            "(decompress it first)"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{what} {path.name} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset "
            f"{exc.start}); expected a JSON text file"
        ) from None
    try:
        return loads(text)
    except ValueError as exc:
        raise ValueError(f"{what} {path.name} is not valid JSON: {exc}") from None


@contextlib.contextmanager
def naming(path: str | Path, what: str) -> Iterator[None]:
    """Inside the block, a ``ValueError`` or ``TypeError`` whose message does not name the file
    gets ``"<what> <file name>: "`` in front, and every message is made one line: what a
    reader raises deep inside (a rate, a histogram, a code space) still says which file."""
    try:
        yield
    except (TypeError, ValueError) as exc:
        name = Path(path).name
        message = " ".join(str(exc).split())
        if name in message and message == str(exc):
            raise
        kind = TypeError if isinstance(exc, TypeError) else ValueError
        raise kind(message if name in message else f"{what} {name}: {message}") from None
