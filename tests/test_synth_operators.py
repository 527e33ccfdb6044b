"""Operator modules against their reference models, and the golden operand streams.

The Verilog of every operator (synth_scripts/operators.v) is simulated with Icarus on the first
clocks of its golden operand stream; the result register must equal the reference model that
the activity statistics are computed from, clock for clock.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from golden_models import CodeSpace, Mask, accumulator_bound, signed_width
from synth_scripts import activity, operators
from toolkit_base import toolchain

VERILOG = Path(operators.__file__).with_name("operators.v")
CYCLES = 300


def simulate(op: operators.Operator, streams: dict[str, np.ndarray], workdir: Path) -> dict:
    """Result registers of ``op`` after each of the first CYCLES operations (Icarus)."""
    params = ", ".join(f".{k}({v})" for k, v in op.params.items())
    decls, assigns, reads = [], [], []
    for port, width in op.inputs.items():
        decls.append(f"reg [{width - 1}:0] {port};")
        decls.append(f"reg [{width - 1}:0] mem_{port} [0:{CYCLES - 1}];")
        reads.append(f'$readmemh("{port}.hex", mem_{port});')
        assigns.append(f"{port} = mem_{port}[i];")
        mask = (1 << width) - 1
        text = "\n".join(f"{int(v) & mask:x}" for v in streams[port][:CYCLES])
        (workdir / f"{port}.hex").write_text(text + "\n")
    outs = []
    for port, width in op.outputs.items():
        decls.append(f"wire [{width - 1}:0] {port};")
        outs.append(port)
    conns = ", ".join(f".{p}({p})" for p in ["clk", *op.inputs, *op.outputs])
    fmt = " ".join("%0h" for _ in outs)
    tb = f"""
module tb;
    reg clk = 0;
    {" ".join(decls)}
    integer i;
    {op.module} #({params}) dut ({conns});
    initial begin
        {" ".join(reads)}
        for (i = 0; i < {CYCLES}; i = i + 1) begin
            {" ".join(assigns)}
            #1 clk = 1; #1 clk = 0;
            // the result of operation i-1 is in the output register now
            if (i >= 1) $display("{fmt}", {", ".join(outs)});
        end
        #1 clk = 1; #1 clk = 0;
        $display("{fmt}", {", ".join(outs)});
        $finish;
    end
endmodule
"""
    (workdir / "tb.v").write_text(tb)
    iverilog, vvp = toolchain.require("iverilog"), toolchain.require("vvp")
    subprocess.run([iverilog, "-g2005", "-o", "sim", "tb.v", str(VERILOG)], cwd=workdir, check=True)
    out = subprocess.run([vvp, "-n", "sim"], cwd=workdir, check=True, capture_output=True)
    lines = [ln.split() for ln in out.stdout.decode().splitlines() if ln.strip()]
    return {p: np.array([int(ln[j], 16) for ln in lines]) for j, p in enumerate(outs)}


@pytest.fixture(scope="module")
def streams():
    return activity.operand_streams(16, 1, operators.LINEAR_FAN_IN)


@pytest.mark.parametrize("name", [op.name for op in operators.operators(16, 1)])
def test_verilog_equals_reference_model(name, streams, tmp_path):
    op = next(o for o in operators.operators(16, 1) if o.name == name)
    got = simulate(op, streams[name], tmp_path)
    # The registers start at 0, so the stream the datapath sees is the ports' stream delayed by
    # the input register, behind one operation on the initial value 0; the result register
    # after clock edge e holds the model's value e of that stream.
    seen = {p: np.concatenate([[0], v[:CYCLES]]) for p, v in streams[name].items()}
    want = op.model(seen)
    for port, width in op.outputs.items():
        mask = (1 << width) - 1
        assert got[port].tolist() == (np.asarray(want[port][1:]) & mask).tolist(), port


def test_encoder_model_follows_the_mask_for_other_T_and_k(tmp_path):
    for T, k in ((8, 0), (32, 2)):
        op = next(o for o in operators.operators(T, k) if o.name == "enc")
        q = np.arange(CYCLES) % T - T // 2
        got = simulate(op, {"q": q}, tmp_path)
        mask = Mask.at_zero(CodeSpace(T, "sym"), k)
        tau = mask.space.c - torch.as_tensor(q[:CYCLES])
        assert got["tau"].tolist() == tau.tolist()
        assert got["valid"].tolist() == mask.transmitted(tau).to(torch.int64).tolist()


def test_widths_follow_the_accumulator_bound():
    assert (
        operators.membrane_width(16)
        == 18
        == signed_width(accumulator_bound(3072, 1, CodeSpace(16, "sym")))
    )
    assert operators.attention_width(16) == 16
    ops = {op.key: op for op in operators.operators(16, 1)}
    assert ops["E_MAC4"].params == {"A": 4, "W": 18}
    assert ops["E_enc"].params == {"N": 4, "C": 7, "IMAX": 7, "K": 1}
    assert sorted(ops) == sorted(
        ["E_ACC1", "E_ACC2", "E_ACC4", "E_MAC4", "E_MAC4x4", "E_CMP", "E_SUB", "E_clamp4", "E_enc"]
    )


def test_bit_activity_counts_transitions_per_clock():
    acts = activity.bit_activity(np.array([0, 1, 0, 1, 3]), 2)
    assert [(a.activity, a.duty) for a in acts] == [(0.75, 0.6), (0.25, 0.2)]
    # negative values: two's complement bits, also above bit 63 of a wide register
    wide = activity.bit_activity(np.array([-1, 0, -1]), 70)
    assert all(a.activity == 1.0 for a in wide)
    with pytest.raises(ValueError, match="at least 2 values"):
        activity.bit_activity(np.array([1]), 4)


def test_activation_codes_have_the_stated_silent_mass():
    q = activity.activation_codes(CodeSpace(16, "sym"), 40000, 0.3715, salt=99)
    assert abs(float((q == 0).double().mean()) - 0.3715) < 0.01
    assert int(q.min()) >= -8 and int(q.max()) <= 7
    with pytest.raises(ValueError, match="p_zero must be in"):
        activity.laplace_alpha(1.0)


def test_streams_are_deterministic(streams):
    again = activity.operand_streams(16, 1, operators.LINEAR_FAN_IN)
    for name, ports in streams.items():
        for port, values in ports.items():
            assert np.array_equal(values, again[name][port]), (name, port)
