"""The offline corpus: deterministic, disjoint calibration and evaluation splits."""

import pytest

from networks.corpus import load_corpus, sentences_of_text, split_of


def test_builtin_corpus_splits():
    c = load_corpus("pydoc-topics")
    assert len(c.calibration) >= 100 and len(c.evaluation) >= 300
    assert not set(c.calibration) & set(c.evaluation)
    assert all(split_of(s) == "calibration" for s in c.calibration)
    assert all(split_of(s) == "evaluation" for s in c.evaluation)
    assert load_corpus("pydoc-topics") == c
    assert "/" not in c.source


def test_docstring_corpus_never_leaks_evaluation_sentences():
    extra = load_corpus("python-docstrings")
    assert len(extra.calibration) >= 1000 and "/" not in extra.source
    assert not set(extra.calibration) & set(extra.evaluation)
    # the same hash rule: a sentence shared with pydoc-topics lands in the same split
    ev = set(load_corpus("pydoc-topics").evaluation)
    assert not ev & set(extra.calibration)
    assert all(split_of(s) == "calibration" for s in extra.calibration)


def test_sentences_drop_code_and_headings():
    text = (
        "The if statement\n****************\n\nThe if statement is used for conditional "
        "execution of code.\n\n   if_stmt ::= 'if' expression ':' suite\n\nShort.\n"
        "It selects exactly one of the suites by evaluating the expressions. "
        "Then that suite is executed and nothing else is evaluated at all.\n"
    )
    assert sentences_of_text(text) == [
        "The if statement is used for conditional execution of code.",
        "It selects exactly one of the suites by evaluating the expressions.",
        "Then that suite is executed and nothing else is evaluated at all.",
    ]


def test_text_file_corpus(tmp_path):
    path = tmp_path / "mine.txt"
    lines = [f"Sentence number {i} is here." for i in range(40)]
    path.write_text("\n".join(lines + lines[:5]) + "\n", "utf-8")
    c = load_corpus(str(path))
    assert sorted(c.calibration + c.evaluation) == sorted(lines)
    assert c.name == "mine.txt" and str(tmp_path) not in c.source


def test_bad_names(tmp_path):
    with pytest.raises(ValueError, match="corpus must be one of"):
        load_corpus("wikitext")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_corpus(str(tmp_path / "none.txt"))
    with pytest.raises(TypeError):
        load_corpus(3)
    c = load_corpus("pydoc-topics")
    with pytest.raises(ValueError, match="split must be"):
        c.split("test")
