"""Eager's own Python bindings for fallbacks (option `eager_bindings`).

Input: the aten graph, its decisions and the in-place plan. Output: {fallback node name: the
text of the Python binding eager would call for its overload} (`torch.matmul` for
`aten.matmul.default`); a fallback not in it is the boxed `torch.ops.aten.X.Y(...)` call.

Both reach the same C++ function through the dispatcher; the binding parses its arguments
against generated signatures, where the boxed call converts them against the schema and runs
a Python frame (`OpOverload.__call__`): ~0.1-1.7 µs more a call on cpu
(benchmarks/probe_overhead.py), which is most of lite mode's per-call gap to Dynamo's floor.
A binding chooses among its overloads by argument types, so each entry here is checked by
tests/test_bindings.py: called with the argument kinds the overload's fallbacks pass
(tensors, Python numbers, int lists, keywords), it dispatches exactly the ops, with the
same arguments, that the overload's own call does. The wrapper keeps the overload's name in
each line's comment.
"""
from __future__ import annotations

import torch
import torch.fx

from ..lowering import Decision, DecisionKind

# unary ops whose out-of-place and in-place bindings are torch.X and torch.X_
_UNARY = ("relu", "sigmoid", "tanh", "sin", "cos", "exp", "log", "neg", "rsqrt", "sqrt",
          "abs", "erf", "reciprocal", "floor", "ceil", "trunc", "expm1", "log1p", "log2", "exp2")

# overload -> binding. `torch.X` is torch._C._VariableFunctions (what eager's `torch.X` calls),
# `torch.Tensor.X` a method, `torch._C._nn.X` what `torch.nn.functional` calls.
BINDINGS: dict[str, str] = {
    # views
    "aten.view.default": "torch.Tensor.view",
    "aten.permute.default": "torch.permute",
    "aten.select.int": "torch.select",
    "aten.transpose.int": "torch.transpose",
    "aten.unsqueeze.default": "torch.unsqueeze",
    "aten.squeeze.dim": "torch.squeeze",
    "aten.expand.default": "torch.Tensor.expand",
    "aten.t.default": "torch.t",
    "aten.detach.default": "torch.detach",
    "aten.unbind.int": "torch.unbind",
    # copies, products, normalizations
    "aten.clone.default": "torch.clone",
    "aten.linear.default": "torch._C._nn.linear",
    "aten.matmul.default": "torch.matmul",
    "aten.mm.default": "torch.mm",
    "aten.bmm.default": "torch.bmm",
    "aten.addmm.default": "torch.addmm",
    "aten.layer_norm.default": "torch.layer_norm",
    "aten.softmax.int": "torch.softmax",
    "aten.log_softmax.int": "torch.log_softmax",
    "aten._softmax.default": "torch._softmax",
    "aten._log_softmax.default": "torch._log_softmax",
    "aten.native_layer_norm.default": "torch.native_layer_norm",
    "aten.scaled_dot_product_attention.default": "torch._C._nn.scaled_dot_product_attention",
    "aten.embedding.default": "torch.embedding",
    # gathers, joins, reductions, factories
    "aten.cat.default": "torch.cat",
    "aten.gather.default": "torch.gather",
    "aten.index_select.default": "torch.index_select",
    "aten.slice_scatter.default": "torch.slice_scatter",
    "aten.where.self": "torch.where",
    "aten.sum.dim_IntList": "torch.sum",
    "aten.mean.dim": "torch.mean",
    "aten.amax.default": "torch.amax",
    "aten.cumsum.default": "torch.cumsum",
    "aten.arange.default": "torch.arange",
    "aten.ones.default": "torch.ones",
    "aten.zeros.default": "torch.zeros",
    "aten.full.default": "torch.full",
    # pointwise, and the in-place variants codegen/inplace.py may choose
    "aten.gelu.default": "torch._C._nn.gelu",
    "aten.gelu_.default": "torch._C._nn.gelu_",
    "aten.silu.default": "torch._C._nn.silu",
    "aten.silu_.default": "torch._C._nn.silu_",
    "aten.pow.Tensor_Scalar": "torch.pow",
    "aten.clamp.default": "torch.clamp",
    "aten.masked_fill.Scalar": "torch.masked_fill",
    **{f"aten.{name}.{overload}": f"torch.{name}" for name in ("eq", "ne", "lt", "gt", "le", "ge") for overload in ("Tensor", "Scalar")},
    **{f"aten.{name}.default": f"torch.{name}" for name in ("maximum", "minimum")},
    **{f"aten.{name}.default": f"torch.{name}" for name in _UNARY},
    **{f"aten.{name}_.default": f"torch.{name}_" for name in _UNARY},
    **{f"aten.{name}.Tensor": f"torch.{name}" for name in ("add", "sub", "mul", "div")},
    **{f"aten.{name}_.Tensor": f"torch.Tensor.{name}_" for name in ("add", "sub", "mul", "div")},
}


def binding_for(op: object) -> str | None:
    """The binding text for an aten overload, or None (the wrapper calls the overload)."""
    return BINDINGS.get(str(op)) if isinstance(op, torch._ops.OpOverload) else None


def plan_bindings(
    gm: torch.fx.GraphModule, decisions: dict[str, Decision], inplace: dict[str, torch._ops.OpOverload]
) -> dict[str, str]:
    """{fallback node name: the binding the wrapper calls}, after the in-place choice."""
    plan: dict[str, str] = {}
    for node in gm.graph.nodes:
        decision = decisions.get(node.name)
        if decision is not None and decision.kind is DecisionKind.FALLBACK:
            binding = binding_for(inplace.get(node.name, node.target))
            if binding is not None:
                plan[node.name] = binding
    return plan
