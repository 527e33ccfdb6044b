"""A whole network through the generated hardware, block after block, bit-exact
(docs/network.md).

:func:`run_network` runs one design of a network (:class:`networks.network.NetworkCase`: each
block's case, in order) through each block's hardware pieces
(:func:`regression.block.run_case`: the fast harness on Verilator or Icarus, or the Amaranth
simulator), block ``b``'s hardware output feeding block ``b + 1``: the codes of the next
block's three stream-fed positions and the stream that block ``b``'s last add+LayerNorm unit
made are block ``b + 1``'s inputs (:meth:`networks.block.BlockCase.fed`). Every value of
every block is checked against the integer QNN; the values handed on are counted against the
ones the QNN gave the next block (``handoff``); and the sentence embedding is made from the
last block's stream as the hardware made it (:func:`networks.network.stream_embedding`) and
compared with the QNN's, bit for bit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch

from golden_models.block_pieces import TILE_NEURONS
from regression.block import BlockRun, run_case

__all__ = ["NetworkRun", "run_network"]


@dataclass
class NetworkRun:
    """One design of a network over sentences: each block's run (:class:`BlockRun`), the
    values each block was handed that differ from the QNN's (``handoff[b]``: block ``b``'s
    inputs as block ``b - 1``'s hardware made them; 0 for block 0, fed by the host), the
    sentence embeddings the hardware's last stream gives (``embeddings``: one list of floats
    a sentence) and, per sentence, whether it equals the QNN's bit for bit; ``seconds`` per
    block."""

    design: str
    blocks: list[BlockRun]
    handoff: list[int]
    embeddings: list[list[float]]
    equal: list[bool]
    seconds: list[float] = field(default_factory=list)

    @property
    def mismatches(self) -> int:
        """Every value of every block that differs from the QNN's, every value handed on that
        differs, and every embedding that is not the QNN's."""
        return (sum(b.mismatches for b in self.blocks) + sum(self.handoff)
                + sum(not e for e in self.equal))

    @property
    def checked(self) -> int:
        return sum(p.checked for b in self.blocks for p in b.pieces)

    @property
    def cycles(self) -> int:
        return sum(b.cycles for b in self.blocks)

    @property
    def tokens(self) -> int:
        return self.blocks[0].tokens

    def dump(self) -> dict:
        """Everything of the run as plain JSON data: :meth:`load` rebuilds it, equal."""
        return {"design": self.design, "blocks": [b.dump() for b in self.blocks],
                "handoff": list(self.handoff), "embeddings": self.embeddings,
                "equal": list(self.equal), "seconds": list(self.seconds)}

    @classmethod
    def load(cls, data: dict) -> NetworkRun:
        """The run :meth:`dump` gave ``data`` of."""
        return cls(**{**data, "blocks": [BlockRun.load(b) for b in data["blocks"]]})


def run_network(qnn, case, *, tile_neurons: int = TILE_NEURONS, sim: str = "verilator",
                root=None, told=None) -> NetworkRun:
    """The sentences of ``case`` (:class:`networks.network.NetworkCase`: one design of every
    block of ``qnn``) through every block's hardware pieces on ``sim`` (``"verilator"`` or
    ``"icarus"``: the generated Verilog in the fast harness, builds under ``root``; or
    ``"amaranth"``), each linear layer in tiles of at most ``tile_neurons`` neurons, block
    ``b``'s hardware output feeding block ``b + 1``. ``told`` hears of each piece and block
    as it ends."""
    from networks.network import stream_embedding

    blocks, handoff, seconds = [], [], []
    made: dict | None = None
    for b, bcase in enumerate(case.blocks):
        t0 = time.perf_counter()
        differ = 0
        if made is not None:
            bcase, differ = bcase.fed(made)
        made = {}
        run = run_case(qnn, bcase, tile_neurons=tile_neurons, sim=sim, root=root,
                       told=None if told is None else (lambda line, b=b: told(f"block {b}: "
                                                                             f"{line}")),
                       outputs=made)
        blocks.append(run)
        handoff.append(differ)
        seconds.append(time.perf_counter() - t0)
        if told is not None:
            told(f"{case.design.name}: block {b}, {run.mismatches} mismatches"
                 + (f", {differ} values handed on differ" if differ else "")
                 + f" ({seconds[-1]:.0f} s)")
    r_out = made["r_out"]
    embeddings, equal, at = [], [], 0
    for i, seq in enumerate(case.blocks[-1].sequences):
        e = stream_embedding(qnn, r_out[at:at + seq.length], seq.valid)
        at += seq.length
        embeddings.append(e.tolist())
        equal.append(bool(torch.equal(e, case.embeddings[i])))
    return NetworkRun(case.design.name, blocks, handoff, embeddings, equal, seconds)
