"""prims ops that reach the wrapper as eager fallbacks, called as the aten op they run.

Input: the aten FX graph and its decisions. Output: {fallback node name: the aten overload
the wrapper calls instead}; `aten_arguments` gives that call's arguments.

A `prims.*` op has no C++ kernel: calling one runs torch/_prims' Python implementation,
which checks metadata in Python before it calls aten (~50 µs a call on cpu, against a few
µs for the aten call itself). AOTAutograd's tensorify_python_scalars pass puts
`prims.convert_element_type` into graphs wherever Dynamo passes a Python float as a tensor
under dynamic=True (the `eps` of every RMSNorm: 13 calls in a 2-layer llama's forward).
`prims.convert_element_type(a, dtype)` is `torch.empty_like(a, dtype=dtype)` followed by
`copy_` of `a` into it, which is what `aten._to_copy(a, dtype=dtype)` does (the same
memory-format rule, the same copy kernel); tests/test_wrapper.py compares the two over
layouts (transposed, sliced, expanded, 0-dim) and dtype pairs.
"""
from __future__ import annotations

from typing import Any

import torch
import torch.fx

from ..lowering import Decision, DecisionKind

aten, prims = torch.ops.aten, torch.ops.prims

ATEN_FOR_PRIMS: dict[Any, torch._ops.OpOverload] = {prims.convert_element_type.default: aten._to_copy.default}


def plan_prims(gm: torch.fx.GraphModule, decisions: dict[str, Decision]) -> dict[str, torch._ops.OpOverload]:
    """{fallback node name: the aten overload called instead of its prims op}."""
    return {
        node.name: ATEN_FOR_PRIMS[node.target]
        for node in gm.graph.nodes
        if node.target in ATEN_FOR_PRIMS and node.name in decisions and decisions[node.name].kind is DecisionKind.FALLBACK
    }


def aten_arguments(node: torch.fx.Node) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """(args, kwargs) of the ATEN_FOR_PRIMS call for a planned prims node."""
    tensor, dtype = node.args  # convert_element_type(Tensor a, ScalarType dtype) -> _to_copy(a, *, dtype)
    return (tensor,), {"dtype": dtype}
