"""Atomic file writing: a reader never sees a half-written file or folder.

The data goes to a temporary file (or folder) beside the destination, so the final rename stays on
one file system, and is renamed into place only once it is complete; on any failure the temporary
is removed and the destination is left as it was.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "OWNER_FILE",
    "copy_atomic",
    "folder_digest",
    "kept_value",
    "source_digest",
    "locked",
    "owned_files",
    "public",
    "write_report_set",
    "replace_dir",
    "replace_owned",
    "staging_dir",
    "write_atomic",
]

#: In a folder a command writes files into: the names of the files it wrote there (the only
#: ones it replaces or removes later; every other file in the folder is the user's).
OWNER_FILE = ".matterhorn-owned.json"


def _umask() -> int:
    """The process's umask: from ``/proc/self/status`` where there is one (reading it so
    changes nothing), else by setting it and putting it back."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def public(path: str | os.PathLike, *, folder: bool = False) -> None:
    """Give a file made by ``tempfile`` (mode 0600, a folder 0700) the mode of one made by
    ``open`` (0666, a folder 0777) less the umask: 0644 and 0755 with the usual umask 022, so
    a colleague on a shared machine can read the results."""
    os.chmod(path, (0o777 if folder else 0o666) & ~_umask())


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
        public(tmp)
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
        public(tmp)
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
    public(tmp, folder=True)  # it may become a result folder (replace_dir)
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_report_set(out: str | os.PathLike, name: str, doc: dict, plot, markdown) -> list[Path]:
    """``name.json`` (``doc``), ``name.png`` (``plot(doc, path)``) and ``name.md``
    (``markdown(doc)``) into ``out``: staged in ``.name-*`` beside it, then moved in, the
    Markdown last, so a failed or interrupted write leaves the earlier set or none."""
    out = Path(out)
    names = (f"{name}.json", f"{name}.png", f"{name}.md")
    with staging_dir(out.parent, prefix=f".{name}-") as stage:
        (stage / names[0]).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        plot(doc, stage / names[1])
        (stage / names[2]).write_text(markdown(doc), encoding="utf-8")
        out.mkdir(parents=True, exist_ok=True)
        for n in names:
            os.replace(stage / n, out / n)
    return [out / n for n in names]


@contextlib.contextmanager
def locked(path: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive advisory lock on the file ``path`` (created if missing) for the block.

    Processes that build the same cached artefact (two pytest-xdist workers, two ``matterhorn``
    runs sharing a folder) take turns instead of writing it at once; the second one then finds
    the first one's result. The lock ends with the block, or with the process.
    """
    import fcntl

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def replace_dir(tmp: str | os.PathLike, out: str | os.PathLike) -> None:
    """Put the complete folder ``tmp`` at ``out``, replacing any folder there."""
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    os.replace(tmp, out)


def owned_files(folder: str | os.PathLike) -> set[str]:
    """The file names :func:`replace_owned` listed in ``folder`` (none if missing or unreadable)."""
    try:
        names = json.loads((Path(folder) / OWNER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    if not isinstance(names, list):
        return set()
    return {n for n in names if isinstance(n, str) and n and "/" not in n and n != OWNER_FILE}


def replace_owned(stage: str | os.PathLike, out: str | os.PathLike, *, also_own=()) -> list[str]:
    """Move the files of ``stage`` into ``out``, replacing only the caller's own files.

    The caller's own files are those listed in ``out``'s :data:`OWNER_FILE` by an earlier call,
    plus ``also_own`` (names it knows are its own); those not written this time are removed.
    Other files in ``out`` stay. The list of files written goes to :data:`OWNER_FILE`; when
    nothing was written it is removed, and so is ``out`` if that leaves it empty. Returns the
    names written (sorted). ``stage`` holds files only.
    """
    stage, out = Path(stage), Path(out)
    new = sorted(p.name for p in stage.iterdir()) if stage.is_dir() else []
    if (stage / OWNER_FILE).exists():
        raise ValueError(f"{OWNER_FILE} is a reserved name")
    if not new and not out.is_dir():
        return new
    out.mkdir(parents=True, exist_ok=True)
    for name in sorted((owned_files(out) | set(also_own)) - set(new)):
        if (out / name).is_file():
            (out / name).unlink()
    for name in new:
        os.replace(stage / name, out / name)
    if new:
        write_atomic(out / OWNER_FILE, json.dumps(new, indent=1) + "\n")
    else:
        (out / OWNER_FILE).unlink(missing_ok=True)
        if not any(out.iterdir()):
            out.rmdir()
    return new


def folder_digest(folder: str | os.PathLike, suffixes=None) -> str:
    """SHA-256 of the files under ``folder`` (those ending in one of ``suffixes``, or all but
    hidden ones): each one's path relative to ``folder`` and its bytes, in path order. Names
    what a result was made of (sources, a model's files), wherever the folder is."""
    root = Path(folder)
    h = hashlib.sha256()
    paths = sorted(p for p in root.rglob("*") if p.is_file()
                   and (p.suffix in suffixes if suffixes is not None
                        else not any(part.startswith(".") for part in p.relative_to(root).parts)))
    for path in paths:
        h.update(path.relative_to(root).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def kept_value(path: str | os.PathLike, key: str, make):
    """``make()``, kept in file ``path`` under ``key`` (a string naming everything the value
    is made of): read back when ``path`` holds a value of the same key, else made and written
    there atomically (the folder must exist). A cache of a slow, pure computation beside what
    it was computed from (a parsed netlist, its pins' energies); a file of another key, or one
    that cannot be read, is made again and replaced. The file is Python's pickle, read only
    from a folder this toolkit wrote."""
    import pickle

    path = Path(path)
    try:
        kept_key, value = pickle.loads(path.read_bytes())
        if kept_key == key:
            return value
    except (OSError, EOFError, ValueError, TypeError, pickle.UnpicklingError, AttributeError):
        pass
    value = make()
    write_atomic(path, pickle.dumps((key, value), protocol=pickle.HIGHEST_PROTOCOL))
    return value


@functools.cache
def source_digest(path: str | os.PathLike) -> str:
    """The first 16 hex digits of the SHA-256 of file ``path`` (a module's source, read once a
    process): part of the key a module keeps what it computed under (:func:`kept_value`), so
    that a change of the code makes it again."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
