"""Reading the JSON files the energy model takes (unit costs, synthesis reports, statistics).

One reader so that every file gets the same checks and messages: a directory, a missing file,
a gzip or other binary file and bad JSON each name the file and what was expected.
"""

from __future__ import annotations

import json
from pathlib import Path

#: The first two bytes of every gzip stream (RFC 1952).
GZIP_MAGIC = b"\x1f\x8b"


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
        The file is gzip-compressed, not UTF-8 text, or not valid JSON; the message names it.
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
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what} {path.name} is not valid JSON: {exc}") from None
