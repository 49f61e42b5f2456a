"""Calls the wrapper need not make: `detach` inside a compiled graph.

Input: the aten FX graph and its decisions. Output: the names of the `aten.detach.default`
nodes the wrapper emits as `bufN = bufM` (the same tensor) instead of a call.

A compiled graph never records autograd history: AOTAutograd runs a training graph's forward
inside its autograd.Function (grad off), its backward with grad off (it refuses double
backward), and chooses the inference graph only when nothing requires grad. `detach` there
returns an alias with the same data, sizes, strides and storage, and nothing reads the
difference (`requires_grad`, the tensor's identity). Training graphs hold many: the
backward of a kept CompositeImplicitAutograd op recomputes the op's body from detached
inputs (decomp/plan.py), about 20 a transformer layer, each a boxed call of ~1.3 µs on cpu,
none of which eager's autograd engine makes.

A detach that is a graph output stays a call: AOTAutograd relates outputs to inputs by
identity and aliasing, and the output's own tensor is what it was traced to return.
"""
from __future__ import annotations

import torch
import torch.fx

from ..lowering import Decision, DecisionKind


def plan_identities(gm: torch.fx.GraphModule, decisions: dict[str, Decision]) -> frozenset[str]:
    """The detach nodes emitted as their input itself (eager calls, not graph outputs)."""
    return frozenset(
        node.name
        for node in gm.graph.nodes
        if node.target is torch.ops.aten.detach.default
        and node.name in decisions
        and decisions[node.name].kind in (DecisionKind.FALLBACK, DecisionKind.VIEW)
        and not any(user.op == "output" for user in node.users)
    )
