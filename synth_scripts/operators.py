"""The operators of the paper's unit-cost table: widths, Verilog parameters, reference models.

Each operator is one module of ``operators.v`` with registered inputs and a registered result,
so one operation happens per clock. Widths follow from the paper's model:

- activations are INT4 codes (``n = 4``, the paper's ``T = 16``); weights of the linear layers
  are 1 bit (``+-1``), the attention operands of the QNN are INT4 x INT4;
- the membrane / accumulator width ``W`` holds every partial sum of a neuron with fan-in
  ``F = 3072`` (the FFN-contract input, the largest linear fan-in of BERT-base) for 1-bit
  weights: ``golden_models.signed_width(accumulator_bound(F, 1, CodeSpace(T)))``, 18 bits at
  ``T = 16`` (the bound includes the folded offset and the centred event values of M-TTFS);
- the attention MAC's accumulator holds a fan-in of ``S = 128`` (the P.V product; ``d_k = 64``
  for Q.K^T is smaller) of INT4 x INT4 products: 16 bits;
- comparator, subtraction and clamp work on membranes of width ``W``;
- the encoder converts a code of ``T`` levels (``log2 T`` bits) to ``(tau, valid)`` with the
  paper's mask at zero (``I_max = c``) and dead zone ``k``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from golden_models import CodeSpace, accumulator_bound, signed_width
from synth_scripts import activity

#: Fan-in of the linear layers whose accumulator sets ``W`` (BERT-base FFN width F).
LINEAR_FAN_IN = 3072
#: Fan-in of the attention MAC (sequence length S of the P.V product).
ATTENTION_FAN_IN = 128
#: Activation and attention-operand bits of the paper's operators (INT4).
ACT_BITS = 4


@dataclass(frozen=True)
class Operator:
    """One operator: its Verilog module and parameters, ports and reference model.

    ``model(streams)`` returns the value of every register clock after clock: the input
    registers ``<port>_r`` hold the port streams, the result registers what the operation
    computes from them (``result[i]`` is the register after operation ``i``).
    """

    name: str
    key: str
    title: str
    module: str
    params: dict[str, int]
    inputs: dict[str, int]
    outputs: dict[str, int]
    widths: str
    stream: str
    model: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]] = field(repr=False)

    @property
    def top(self) -> str:
        """Name of the synthesized top module."""
        return f"mh_op_{self.name}"

    @property
    def core_top(self) -> str:
        """Name of the synthesized logic between the registers (``<module>_core``)."""
        return f"mh_core_{self.name}"

    def core_inputs(self) -> dict[str, int]:
        """Ports of the core: the registers it reads, by register name, and their widths."""
        ins = {f"{p}_r": w for p, w in self.inputs.items()}
        if "acc" in self.outputs:
            ins["acc"] = self.outputs["acc"]
        return ins

    def registers(self, streams: dict[str, np.ndarray]) -> dict[str, tuple[np.ndarray, int]]:
        """Every register's values and width: input registers and result registers."""
        regs = {f"{p}_r": (np.asarray(streams[p]), w) for p, w in self.inputs.items()}
        for name, values in self.model(streams).items():
            regs[name] = (np.asarray(values), self.outputs[name])
        return regs


def membrane_width(T: int) -> int:
    """Accumulator width of a 1-bit-weight neuron of fan-in :data:`LINEAR_FAN_IN`."""
    return signed_width(accumulator_bound(LINEAR_FAN_IN, 1, CodeSpace(T, "sym")))


def attention_width(T: int) -> int:
    """Accumulator width of the INT4 x INT4 MAC of fan-in :data:`ATTENTION_FAN_IN`."""
    return signed_width(accumulator_bound(ATTENTION_FAN_IN, ACT_BITS, CodeSpace(16, "sym")))


def _acc(width: int, addends: np.ndarray) -> np.ndarray:
    return activity.wrap(np.cumsum(np.asarray(addends, dtype=np.int64)), width)


def operators(T: int, k: int) -> list[Operator]:
    """The operators for ``T`` time steps and dead zone ``k`` (encoder), in report order."""
    space = CodeSpace(T, "sym")
    W = membrane_width(T)
    WA = attention_width(T)
    n = space.n_bits
    ops = []
    for b, key, title in (
        (1, "E_ACC1", "ACC, 1-bit"),
        (2, "E_ACC2", "ACC, 2-bit"),
        (4, "E_ACC4", "ACC, 4-bit"),
    ):
        addend = (lambda s: 2 * s["x"] - 1) if b == 1 else (lambda s: s["x"])
        ops.append(
            Operator(
                name=f"acc{b}",
                key=key,
                title=title,
                module="mh_acc",
                params={"B": b, "W": W},
                inputs={"x": b},
                outputs={"acc": W},
                widths=(
                    f"{'1-bit weight (+-1)' if b == 1 else f'{b}-bit signed operand'} into a "
                    f"{W}-bit accumulator (fan-in {LINEAR_FAN_IN})"
                ),
                stream=(
                    "1-bit weights of spiking inputs (balanced +-1)"
                    if b == 1
                    else f"{b}-bit activation codes peaked at zero (K/V operand of rate-coded "
                    f"attention at {2**b} levels)"
                ),
                model=lambda s, f=addend, w=W: {"acc": _acc(w, f(s))},
            )
        )
    ops.append(
        Operator(
            name="mac4",
            key="E_MAC4",
            title="INT4 MAC, 1-bit W x 4-bit A",
            module="mh_mac1",
            params={"A": ACT_BITS, "W": W},
            inputs={"w": 1, "a": ACT_BITS},
            outputs={"acc": W},
            widths=f"1-bit weight x 4-bit signed activation into a {W}-bit accumulator "
            f"(fan-in {LINEAR_FAN_IN})",
            stream="dense INT4 activation codes peaked at zero x balanced +-1 weights",
            model=lambda s: {"acc": _acc(W, np.where(s["w"] == 1, s["a"], -s["a"]))},
        )
    )
    ops.append(
        Operator(
            name="mac4x4",
            key="E_MAC4x4",
            title="4-bit x 4-bit MAC",
            module="mh_mac",
            params={"A": ACT_BITS, "B": ACT_BITS, "W": WA},
            inputs={"a": ACT_BITS, "b": ACT_BITS},
            outputs={"acc": WA},
            widths=f"4-bit x 4-bit signed product into a {WA}-bit accumulator "
            f"(fan-in {ATTENTION_FAN_IN})",
            stream="two independent INT4 activation-code streams peaked at zero (Q.K^T)",
            model=lambda s: {"acc": _acc(WA, s["a"] * s["b"])},
        )
    )
    ops.append(
        Operator(
            name="cmp",
            key="E_CMP",
            title="Comparator",
            module="mh_cmp",
            params={"W": W},
            inputs={"v": W, "theta": W},
            outputs={"fire": 1},
            widths=f"{W}-bit signed membrane >= {W}-bit threshold",
            stream="(V, theta[t]) pairs of the golden fire phase of an M-TTFS layer",
            model=lambda s: {"fire": (s["v"] >= s["theta"]).astype(np.int64)},
        )
    )
    ops.append(
        Operator(
            name="sub",
            key="E_SUB",
            title="Membrane subtraction",
            module="mh_sub",
            params={"W": W},
            inputs={"v": W, "theta": W},
            outputs={"y": W},
            widths=f"{W}-bit signed membrane minus {W}-bit threshold",
            stream="(V, theta[t]) pairs of the golden fire phase of an M-TTFS layer",
            model=lambda s: {"y": activity.wrap(s["v"] - s["theta"], W)},
        )
    )
    ops.append(
        Operator(
            name="clamp4",
            key="E_clamp4",
            title="INT4 clamp",
            module="mh_clamp",
            params={"W": W, "N": ACT_BITS},
            inputs={"x": W},
            outputs={"y": ACT_BITS},
            widths=f"{W}-bit signed level clipped to INT4 [-8, 7]",
            stream="pre-clip output levels of the golden layer (round to nearest)",
            model=lambda s: {"y": np.clip(s["x"], -8, 7)},
        )
    )

    def enc_model(s: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        tau, valid = activity.encoder_outputs(s["q"], T, k)
        return {"tau": tau, "valid": valid}

    ops.append(
        Operator(
            name="enc",
            key="E_enc",
            title="M-TTFS encoder",
            module="mh_enc",
            params={"N": n, "C": space.c, "IMAX": space.c, "K": k},
            inputs={"q": n},
            outputs={"tau": n, "valid": 1},
            widths=f"{n}-bit code to {n}-bit event time and valid "
            f"(T={T}, mask at zero I_max={space.c}, k={k})",
            stream=f"activation codes of T={T} levels peaked at zero",
            model=enc_model,
        )
    )
    return ops
