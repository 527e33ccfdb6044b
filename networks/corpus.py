"""Small English corpora available offline, split into calibration and evaluation sentences.

The built-in corpus ``"pydoc-topics"`` is the English prose of the Python Language Reference
topics that every CPython installation ships as :mod:`pydoc_data.topics` (PSF licence): about
460 kB of text, no download, no extra package. Its sentences are extracted deterministically
(grammar and code lines dropped) and assigned to the calibration or the evaluation split by a
hash of the sentence text, so the two splits are disjoint and do not depend on list order.

``"python-docstrings"`` is the English prose of the docstrings of the standard library's Python
sources (modules, classes and functions; test packages left out), read with :mod:`ast` without
importing anything: about 10 700 sentences, used as extra training text for fine-tuning.

A path to a UTF-8 text file with one sentence a line is accepted as well (``name`` ending in
``.txt``), split by the same rule.
"""

from __future__ import annotations

import ast
import hashlib
import re
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

#: Names of the built-in corpora.
CORPORA = ("pydoc-topics", "python-docstrings")

#: Sentences shorter or longer than this (in words) are dropped: headings, fragments, run-ons.
MIN_WORDS, MAX_WORDS = 6, 48
#: Share of sentences (per mille of the hash space) that go to the calibration split.
CALIBRATION_PER_MILLE = 300

_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\"'][.!?])\s+(?=[A-Z\"'(])")
_CODE_CHARS = set("=<>{}[]|*#\\$@`~^")


@dataclass(frozen=True)
class Corpus:
    """Sentences of one corpus, split into two disjoint, deterministic lists.

    Parameters
    ----------
    name : str
        Corpus name (built-in name or the file name of a text file).
    calibration : tuple of str
        Sentences for activation-scale and ``I_max`` calibration.
    evaluation : tuple of str
        Held-out sentences for statistics and quality.
    source : str
        Where the text comes from, without absolute paths.
    """

    name: str
    calibration: tuple[str, ...]
    evaluation: tuple[str, ...]
    source: str

    def split(self, name: str) -> tuple[str, ...]:
        if name not in ("calibration", "evaluation"):
            raise ValueError(f"split must be 'calibration' or 'evaluation', not {name!r}")
        return self.calibration if name == "calibration" else self.evaluation


def _is_prose(sentence: str) -> bool:
    words = sentence.split()
    if not MIN_WORDS <= len(words) <= MAX_WORDS:
        return False
    if any(ch in _CODE_CHARS for ch in sentence):
        return False
    letters = sum(ch.isalpha() or ch.isspace() for ch in sentence)
    return letters >= 0.9 * len(sentence) and sentence[0].isupper() and sentence[-1] in ".!?"


def sentences_of_text(text: str) -> list[str]:
    """Prose sentences of reStructuredText-like text, in order, without duplicates.

    Paragraphs are blocks of unindented lines separated by blank lines; indented lines (grammar
    productions, code examples) and underlines of headings are dropped.
    """
    out: list[str] = []
    seen: set[str] = set()
    paragraph: list[str] = []

    def flush() -> None:
        joined = " ".join(paragraph).strip()
        paragraph.clear()
        for s in _SENTENCE_END.split(joined):
            s = " ".join(s.split()).replace('"', "")
            if _is_prose(s) and s not in seen:
                seen.add(s)
                out.append(s)

    for line in text.splitlines():
        if not line.strip() or line.startswith((" ", "\t")) or set(line.strip()) <= set("*=-~^"):
            flush()
            continue
        paragraph.append(line.strip())
    flush()
    return out


def split_of(sentence: str) -> str:
    """``"calibration"`` or ``"evaluation"``: a fixed function of the sentence text."""
    digest = hashlib.sha256(sentence.encode("utf-8")).digest()
    bucket = int.from_bytes(digest[:4], "big") % 1000
    return "calibration" if bucket < CALIBRATION_PER_MILLE else "evaluation"


def _split(name: str, sentences: list[str], source: str) -> Corpus:
    cal = tuple(s for s in sentences if split_of(s) == "calibration")
    ev = tuple(s for s in sentences if split_of(s) == "evaluation")
    if not cal or not ev:
        raise ValueError(
            f"corpus {name!r} yields {len(cal)} calibration and {len(ev)} evaluation sentences; "
            "both splits need at least one"
        )
    return Corpus(name, cal, ev, source)


def load_corpus(name: str) -> Corpus:
    """Load a corpus by name and split it.

    Parameters
    ----------
    name : str
        One of :data:`CORPORA`, or a path to a ``.txt`` file with one sentence a line.

    Raises
    ------
    ValueError
        Unknown name, or a corpus too small for two splits.
    FileNotFoundError
        A ``.txt`` path that does not exist.
    """
    if not isinstance(name, str):
        raise TypeError(f"corpus name must be a string, not {name!r}")
    if name == "pydoc-topics":
        from pydoc_data.topics import topics

        text = "\n\n".join(topics[key] for key in sorted(topics))
        version = ".".join(str(v) for v in sys.version_info[:2])
        return _split(name, sentences_of_text(text), f"CPython {version} pydoc_data.topics")
    if name == "python-docstrings":
        version = ".".join(str(v) for v in sys.version_info[:2])
        text = "\n\n".join(_stdlib_docstrings())
        return _split(
            name, sentences_of_text(text), f"CPython {version} standard library docstrings"
        )
    if name.endswith(".txt"):
        return _text_corpus(name)
    raise _unknown(name)


def check_corpus(name: object) -> str:
    """Return ``name`` if :func:`load_corpus` can load it, else raise as it would.

    A built-in name is only checked (building ``python-docstrings`` parses the standard
    library: seconds); a ``.txt`` file is read and split, so a file that is missing, not
    UTF-8 text or too small is refused before any work.
    """
    if not isinstance(name, str):
        raise TypeError(f"corpus name must be a string, not {name!r}")
    if name in CORPORA:
        return name
    if name.endswith(".txt"):
        _text_corpus(name)
        return name
    raise _unknown(name)


def _unknown(name: str) -> ValueError:
    return ValueError(
        f"corpus must be one of {CORPORA} or a path to a .txt file (one sentence a line), "
        f"not {name!r}"
    )


def _text_corpus(name: str) -> Corpus:
    """The corpus of a UTF-8 text file with one sentence a line; every error names the file."""
    path = Path(name)
    if path.is_dir():
        raise IsADirectoryError(f"corpus file {name!r} is a directory, not a text file")
    if not path.is_file():
        raise FileNotFoundError(f"corpus file {name!r} does not exist")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"corpus file {name!r} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset "
            f"{exc.start}); give a UTF-8 text file with one sentence a line"
        ) from None
    if "\x00" in text:
        raise ValueError(
            f"corpus file {name!r} is not a text file (it holds NUL bytes); give a UTF-8 text "
            "file with one sentence a line"
        )
    lines = [" ".join(line.split()) for line in text.splitlines()]
    unique = list(dict.fromkeys(line for line in lines if line))
    return _split(path.name, unique, f"text file {path.name}")


def _stdlib_docstrings() -> list[str]:
    """Docstrings of the standard library's ``.py`` files, in path order (nothing imported)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    skip = {"site-packages", "test", "tests", "idle_test"}
    docs = []
    for path in sorted(root.rglob("*.py")):
        if skip & set(path.relative_to(root).parts):
            continue
        try:
            tree = ast.parse(path.read_text("utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue  # a few sources are templates or in other encodings
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc:
                    docs.append(doc)
    return docs


def spread_by_length(sentences, tokenizer, count: int, *, longest: int,
                     what: str = "sentences", name: str = "count",
                     longest_name: str = "longest") -> list[str]:
    """``count`` of ``sentences`` of at most ``longest`` tokens (``tokenizer``'s), their
    lengths spread over the range (evenly spaced ranks of the sorted lengths, shortest and
    longest included).

    Raises
    ------
    ValueError
        No sentence fits: one line naming ``longest_name`` (the option that set ``longest``)
        and the shortest sentence's length; fewer than ``count`` fit: one line naming ``name``
        (the option that set ``count``) and how many do.
    """
    every = sorted((int(tokenizer([s])[1].sum()), i, s) for i, s in enumerate(sentences))
    sized = [x for x in every if x[0] <= longest]
    if not sized and every:
        shortest = every[0][0]
        raise ValueError(f"{longest_name} {longest}: none of the {what} has at most {longest} "
                         f"tokens (the shortest has {shortest}); give {longest_name} {shortest} "
                         "or more")
    if len(sized) < count:
        raise ValueError(f"{name} must be at most {len(sized)} ({what} of at most {longest} "
                         f"tokens), not {count}")
    picks = [sized[round(i * (len(sized) - 1) / max(count - 1, 1))] for i in range(count)]
    return [s for _, _, s in picks]

