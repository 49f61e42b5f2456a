"""Undo the decompositions Dynamo itself makes while tracing.

Before any backend sees the graph, Dynamo rewrites a few calls into other ops (to avoid a
graph break when a scalar argument is a tensor):

- `torch.addcdiv(x, a, b, value=v)`  ->  `torch.add(x, torch.mul(torch.div(a, b), v))`
- `y.addcmul_(a, b, value=v)`        ->  `y.copy_(prims.fma(torch.mul(a, b), v, y))`
- `y.addcdiv_(a, b, value=v)`        ->  `y.copy_(prims.fma(torch.div(a, b), v, y))`

Each rounds differently from the eager kernel, so the original call goes back: outside
compile regions lite mode runs it eagerly, inside them (and in the default mode) it is
lowered whole with eager's order and fused multiply-add (lowering/fma.py; before
2026-11-27 the chain stayed there, and `prims.fma` was an eager call between kernels).
The addcdiv chain is only recognised when its three nodes carry the same (non-empty)
stack trace, i.e. came from one source call: a user's own `x + (a / b) * v` is left
alone. `y.add_(o, alpha=<tensor>)` (fma without a product) has no eager op with a tensor
alpha to go back to and stays as Dynamo wrote it (a kernel's fma in regions).
"""
from __future__ import annotations

from typing import Any

import torch
import torch.fx


_FMA = torch.ops.prims.fma.default
_INPLACE = {torch.mul: "addcmul_", torch.div: "addcdiv_"}


def recompose(gm: torch.fx.GraphModule) -> list[str]:
    """Rewrite Dynamo's decompositions back in place; return one line per rewrite."""
    done: list[str] = []
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target is torch.add:
            done += _addcdiv(gm.graph, node)
        elif node.op == "call_function" and node.target is _FMA:
            done += _inplace(gm.graph, node)
    if done:
        gm.recompile()
    return done


def _only_user(node: Any, user: torch.fx.Node) -> bool:
    return isinstance(node, torch.fx.Node) and list(node.users) == [user]


def _scalar(value: Any) -> bool:
    """A Python number or a SymInt/SymFloat node: what `value=` accepts without item()."""
    if isinstance(value, torch.fx.Node):
        return isinstance(value.meta.get("example_value"), (torch.SymInt, torch.SymFloat))
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _addcdiv(graph: torch.fx.Graph, add: torch.fx.Node) -> list[str]:
    if add.kwargs or len(add.args) != 2:
        return []
    x, mul = add.args
    if not (_only_user(mul, add) and mul.target is torch.mul and not mul.kwargs and len(mul.args) == 2):
        return []
    div, value = mul.args
    if not (_only_user(div, mul) and div.target is torch.div and not div.kwargs and len(div.args) == 2):
        return []
    trace = add.meta.get("stack_trace")
    if not trace or any(n.meta.get("stack_trace") != trace for n in (mul, div)) or not _scalar(value):
        return []
    a, b = div.args
    with graph.inserting_before(add):
        new = graph.call_function(torch.addcdiv, (x, a, b), {"value": value})
    new.meta.update(add.meta)
    add.replace_all_uses_with(new)
    for dead in (add, mul, div):
        graph.erase_node(dead)
    return [f"{new.name}: torch.addcdiv(value=...) from {div.name}, {mul.name}, {add.name}"]


def _inplace(graph: torch.fx.Graph, fma: torch.fx.Node) -> list[str]:
    if fma.kwargs or len(fma.args) != 3:
        return []
    product, value, y = fma.args
    copies = [u for u in fma.users if u.op == "call_method" and u.target == "copy_" and u.args == (y, fma)]
    if len(fma.users) != 1 or not copies or not isinstance(product, torch.fx.Node):
        return []
    method = _INPLACE.get(product.target)
    if method is None or not _only_user(product, fma) or product.kwargs or len(product.args) != 2 or not _scalar(value):
        return []
    (copy,) = copies
    with graph.inserting_before(copy):
        new = graph.call_method(method, (y, *product.args), {"value": value})
    new.meta.update(copy.meta)
    copy.replace_all_uses_with(new)
    for dead in (copy, fma, product):
        graph.erase_node(dead)
    return [f"{new.name}: Tensor.{method}(value=...) from {product.name}, {fma.name}, {copy.name}"]

