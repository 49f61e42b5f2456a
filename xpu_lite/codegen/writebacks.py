"""Write-backs stored in place: an input's new value stored into the input by its kernel.

Input: the aten FX graph and its kernel groups. Output: {copy_ node name: the
stored node whose kernel writes into the copy's destination}. A graph that mutates one of
its inputs ends, from AOTAutograd, in `copy_(input, new_value)`: batch norm's running mean,
variance and batch count in every training step, three eager calls per batch norm. Where a
kernel computes the new value, it can store it into the input directly, as Inductor does;
the wrapper then binds the stored node to the input and the copy_ makes no call.

Only where nothing can tell the difference:
- the destination is a graph input of the kernel's dtype, device, sizes and strides (so
  the kernel's store addresses exactly the elements the copy would write);
- the value is stored by the kernel (not a view of a stored value) with a plain store, and
  nothing else reads it;
- nothing but that kernel and the copy_ reads the input, and the kernel reads it only at
  the element it stores (the same index, no mask) and only to compute the stored value:
  each element is read before it is written, by the same program, and no other output of
  the kernel sees a new value (batch norm's `running_mean * 0.9 + mean * 0.1`).
"""
from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.fx

from .._torch_compat import sym_expr
from ..lowering import ir
from ..lowering.kernel_builder import Group


def plan_writebacks(gm: torch.fx.GraphModule, groups: Sequence[Group]) -> dict[str, str]:
    """{copy_ node name: the stored node whose kernel writes the copy's destination}."""
    stored_by = {node: group for group in groups for node in group.stored}
    plan: dict[str, str] = {}
    for node in gm.graph.nodes:
        if node.target is not torch.ops.aten.copy_.default or len(node.args) != 2 or node.kwargs:
            continue
        dst, src = node.args
        group = stored_by.get(src) if isinstance(src, torch.fx.Node) else None
        if group is not None and isinstance(dst, torch.fx.Node) and _stores_into(dst, src, node, group):
            plan[node.name] = src.name
    return plan


def _stores_into(dst: torch.fx.Node, src: torch.fx.Node, copy: torch.fx.Node, group: Group) -> bool:
    if dst.op != "placeholder" or group.into is not None or set(src.users) != {copy}:
        return False
    if not set(dst.users) <= {copy, *group.members, *group.inlined}:
        return False
    kernel = group.kernel
    out = kernel.outputs[group.stored.index(src)]
    val = dst.meta.get("val")
    if not isinstance(val, torch.Tensor) or val.dtype != out.dtype or val.device != src.meta["val"].device:
        return False
    if [sym_expr(s) for s in val.shape] != list(out.sizes) or [sym_expr(s) for s in val.stride()] != list(out.strides):
        return False
    stores = [s for s in kernel.stores if s.buffer == out.name]
    if len(stores) != 1 or stores[0].bounds or stores[0].accumulate:
        return False
    store = stores[0]
    sources = {b.name for b, n in zip(kernel.inputs, group.external, strict=True) if n is dst}
    reads = {i for i, v in enumerate(kernel.values) if isinstance(v, ir.Load) and v.buffer in sources}
    if any(kernel.values[i].index != store.index or kernel.values[i].mask is not None or kernel.values[i].bounds
           for i in reads):
        return False
    seen = set(reads)  # the values computed from the input's old elements
    for i, value in enumerate(kernel.values):
        if i not in seen and seen.intersection(ir.operands(value)):
            seen.add(i)
    return all(s is store or not ({s.value, *(b for b, _ in s.bounds)} & seen) for s in kernel.stores)
