"""Parameter checks shared by several packages (integers, seeds, output folders, the files and
folders a user names), each check and message written once.

The code space checks of the paper (``T`` a power of two up to 256, ``k``, ``I_max``) live in
:mod:`golden_models.codespace` and build on :func:`check_integer`; the generated RTL supports a
smaller range of ``T``, and :func:`check_rtl_T` is the one place that says so.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "MAX_RTL_T",
    "MAX_SEED",
    "check_file",
    "check_folder",
    "check_int",
    "check_integer",
    "check_out_dir",
    "check_out_writable",
    "check_rtl_T",
    "check_seed",
    "unique",
]

#: The generated RTL supports ``T = 2**n`` with ``n`` in 1..6.
MAX_RTL_T = 64
#: Largest stimulus seed (seeds go to simulators as 32-bit integers).
MAX_SEED = 2**31 - 1


def check_integer(name: str, value: object) -> int:
    """Return ``value`` if it is an ``int`` (``bool`` excluded), else raise ``TypeError``.

    The type half of every integer parameter check; each caller adds its own range.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    return value


def check_int(name: str, value: object, lo: int, hi: int, *, must_be: str = "must be in") -> int:
    """Return ``value`` if it is an ``int`` (not ``bool``) in ``lo..hi``, else raise.

    Parameters
    ----------
    name : str
        Parameter name, first word of the message.
    value : object
    lo, hi : int
        Valid range, both ends included.
    must_be : str
        Wording before the range in the ``ValueError``: ``"T must be in 2..64, not 128"``; the
        router's parameters read ``"rows must be 1..64, not 0"`` (``must_be="must be"``).

    Raises
    ------
    TypeError
        ``value`` is not an integer.
    ValueError
        ``value`` is outside ``lo..hi``.
    """
    check_integer(name, value)
    if not lo <= value <= hi:
        raise ValueError(f"{name} {must_be} {lo}..{hi}, not {value!r}")
    return value


def check_rtl_T(T: int) -> int:
    """Return ``T`` if the generated RTL supports it (``T <= 64``), else raise ``ValueError``.

    ``T`` has passed :func:`golden_models.codespace.check_T` (a power of two up to 256).
    """
    if T > MAX_RTL_T:
        raise ValueError(f"T must be at most {MAX_RTL_T} for the generated RTL, not {T!r}")
    return T


def check_seed(seed: object, name: str = "seed") -> int:
    """Return ``seed`` if it is an integer in ``0..MAX_SEED``, else raise."""
    return check_int(name, seed, 0, MAX_SEED)


def check_out_dir(path: object, name: str = "output folder") -> str:
    """Return ``path`` (a ``str`` or path-like) if it names a folder, else raise.

    An empty string (or only spaces) would mean the current directory by accident
    (``Path("")`` is ``.``), so it is refused, as is a path to an existing file.

    Raises
    ------
    TypeError
        ``path`` is not a string or path-like.
    ValueError
        ``path`` is empty or an existing file.
    """
    import os

    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"{name} must be a folder path, not {path!r}")
    text = os.fspath(path)
    if isinstance(text, bytes) or not text.strip():
        raise ValueError(f"{name} must be a non-empty path, not {text!r}")
    if os.path.exists(text) and not os.path.isdir(text):
        raise ValueError(f"{name} {text!r} exists and is not a directory")
    return path  # type: ignore[return-value]


def check_file(path: object, what: str) -> Path:
    """``path`` as a ``Path`` if it names a file, else one line naming it: ``IsADirectoryError``
    for a folder (``liberty file 'x' is a folder, not a file``), ``FileNotFoundError`` when
    nothing is there."""
    p = Path(os.fspath(path))
    if p.is_dir():
        raise IsADirectoryError(f"{what} {str(path)!r} is a folder, not a file")
    if not p.is_file():
        raise FileNotFoundError(f"{what} {str(path)!r} does not exist")
    return p


def check_folder(path: object, what: str) -> Path:
    """``path`` as a ``Path`` if it names a folder, else one line naming it:
    ``NotADirectoryError`` for a file, ``FileNotFoundError`` when nothing is there."""
    p = Path(os.fspath(path))
    if p.exists() and not p.is_dir():
        raise NotADirectoryError(f"{what} {str(path)!r} is a file, not a folder")
    if not p.is_dir():
        raise FileNotFoundError(f"{what} {str(path)!r} does not exist")
    return p


def _existing(text: str) -> str:
    """The nearest of ``text`` and its parents that exists (as the user spelled it)."""
    import os

    while not os.path.lexists(text):
        parent = os.path.dirname(text.rstrip(os.sep)) or "."
        if parent == text:
            break
        text = parent
    return text


def check_out_writable(path: object, name: str = "output folder", *, subdirs=(), files=(),
                       beside: bool = False) -> str:
    """:func:`check_out_dir`, and the command can write there: return ``path`` or raise.

    Checked before any work, so that a run never computes for minutes and then finds
    it cannot write its report (docs/reliability.md, "Validation before work"):

    - the nearest existing folder on the way to ``path`` (``path`` itself when it exists) is a
      folder this process can create entries in, and with ``beside`` (a command that stages
      its files in a folder beside ``path``) so is the folder that holds ``path``: a probe
      folder is made there and removed at once, so read-only folders, read-only file systems
      and immutable folders are all caught;
    - ``subdirs``, the folders the command keeps inside ``path`` (``sim``, ``jobs``, ...), are
      folders where they exist; ``files``, the files it writes there, are not.

    Raises
    ------
    TypeError, ValueError
        As :func:`check_out_dir`; a part of the way that is a file; a folder of ``subdirs``
        that is a file; a file of ``files`` that is a folder.
    PermissionError
        A folder on the way cannot be written; the message names it and the reason.
    """
    import os
    import tempfile

    check_out_dir(path, name)
    text = os.fspath(path)
    for sub in subdirs:
        inner = os.path.join(text, sub)
        if os.path.lexists(inner) and not os.path.isdir(inner):
            raise ValueError(f"{name} {text!r} holds a file {sub!r} where the command keeps its "
                             f"{sub}/ folder; move that file or choose another folder")
    for file in files:
        if os.path.isdir(os.path.join(text, file)):
            raise ValueError(f"{name} {text!r} holds a folder {file!r} where the command writes "
                             "a file; move that folder or choose another folder")
    places = [_existing(text)]
    if beside and places[0] == text:  # it exists: the staging folder goes beside it
        places.append(_existing(os.path.dirname(text.rstrip(os.sep)) or "."))
    for place in dict.fromkeys(places):
        if not os.path.isdir(place):
            raise ValueError(f"{name} {text!r} cannot be created: {place!r} is a file, "
                             "not a folder")
        try:
            os.rmdir(tempfile.mkdtemp(prefix=".matterhorn-probe-", dir=place))
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise PermissionError(f"{name} {text!r} cannot be written: no entry can be made in "
                                  f"{place!r} ({reason})") from None
    return path  # type: ignore[return-value]


def unique(values) -> tuple:
    """``values`` without repeats, first occurrence kept, in order (``--sim icarus --sim icarus``
    runs once)."""
    return tuple(dict.fromkeys(values))
