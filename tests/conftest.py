"""Shared fixtures: the MiniLM model, its corpus and one post-training conversion.

Loading MiniLM and converting it take a few seconds each; the MiniLM test modules share one of
each per session. Every module gets its own copy of the converted network, because tests set
its masks.
"""

import contextlib
import copy

import pytest
import torch

from golden_models.models.bert import load_minilm
from golden_models.models.corpus import load_corpus
from golden_models.models.ptq import convert

#: Calibration sentences of the shared conversion (few: the tests check properties, not quality).
CALIBRATION = 6


@contextlib.contextmanager
def _torch_threads(n: int):
    saved = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


@pytest.fixture(scope="module")
def one_thread():
    """One torch thread for a module: many small tensor operations run faster than on two
    threads of a shared machine."""
    with _torch_threads(1):
        yield


@pytest.fixture(scope="session")
def minilm():
    """``(float model, tokenizer)`` of all-MiniLM-L6-v2; tests must not modify the model."""
    with _torch_threads(1):
        return load_minilm()


@pytest.fixture(scope="session")
def pydoc_corpus():
    """The built-in ``pydoc-topics`` corpus."""
    return load_corpus("pydoc-topics")


@pytest.fixture(scope="session")
def _minilm_qnn_shared(minilm, pydoc_corpus):
    model, tok = minilm
    with _torch_threads(1):
        return convert(model, tok, pydoc_corpus.calibration[:CALIBRATION])


@pytest.fixture(scope="module")
def minilm_qnn(_minilm_qnn_shared):
    """MiniLM converted post-training on the first calibration sentences: a copy per module."""
    return copy.deepcopy(_minilm_qnn_shared)
