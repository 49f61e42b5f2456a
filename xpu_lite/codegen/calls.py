"""CallPlan: how the wrapper calls the fallbacks it does not call as their traced overload.

Each planner decides one kind, by node name: codegen/inplace.py (in-place variants),
bindings.py (eager's Python bindings), identities.py (detaches that are their input),
prims.py (prims ops called as the aten op they run; host float casts done in Python),
writebacks.py (an input's copy_ whose kernel stores into the input), reinplace.py (custom
ops and user Triton kernels that write their inputs, called on them).
backend.compile_graph gathers them; wrapper.py reads the plan; explain() shows its notes.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import torch


@dataclasses.dataclass(frozen=True)
class CallPlan:
    """How the wrapper calls fallbacks where not as the traced node's own overload, by node name."""

    inplace: dict[str, torch._ops.OpOverload] = dataclasses.field(default_factory=dict)  # codegen/inplace.py
    bindings: dict[str, str] = dataclasses.field(default_factory=dict)  # eager's binding text, codegen/bindings.py
    identities: frozenset[str] = frozenset()  # detach nodes emitted as their input, codegen/identities.py
    prims: dict[str, torch._ops.OpOverload] = dataclasses.field(default_factory=dict)  # codegen/prims.py
    host_values: dict[str, torch.dtype] = dataclasses.field(default_factory=dict)  # casts computed in Python, codegen/prims.py
    writebacks: dict[str, str] = dataclasses.field(default_factory=dict)  # copy_ -> the node stored into its input, writebacks.py
    copied_bases: dict[str, tuple[Any, ...]] = dataclasses.field(default_factory=dict)  # reinplace.py's writers

    def notes(self) -> list[tuple[str, str]]:
        """(node, what explain() says of the call) for every planned fallback."""
        return [
            *((n, f"runs in place as {op}") for n, op in self.inplace.items()),
            *((n, f"called as {b}") for n, b in self.bindings.items()),
            *((n, "no call: the same tensor (detach with grad off, as in every compiled graph)") for n in sorted(self.identities)),
            *((n, f"called as {op} (what the prims op's Python implementation runs)") for n, op in self.prims.items()
              if n not in self.host_values),
            *((n, "no call: a host float the kernels read by value, cast in Python as eager's copy does")
              for n in self.host_values),
            *((n, f"no call: the kernel computing {v} stores it into the input in place") for n, v in self.writebacks.items()),
            *((n, "the op writes its inputs in place, as in eager (nothing reads their old values later)"
                  + (f"; copies bases {list(c)} first" if c else "")) for n, c in self.copied_bases.items()),
        ]
