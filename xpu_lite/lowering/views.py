"""Views as index math: view-type ops on strided tensors are not kernels and not copies.

A kernel that reads a view loads from the view's root buffer with the view's own sizes,
strides and storage offset (which fake tensors give exactly). A view that something
outside the kernels reads (a fallback, the graph output) runs as its eager alias op,
which copies nothing either. Data-dependent views and as_strided fall back.
"""
from __future__ import annotations

from typing import Any

import torch
import torch.fx

from .._torch_compat import free_unbacked_symbols

aten = torch.ops.aten

VIEW_OPS: frozenset[Any] = frozenset(
    {
        aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.permute.default,
        aten.transpose.int, aten.t.default, aten.expand.default, aten.unsqueeze.default, aten.squeeze.default,
        aten.squeeze.dim, aten.squeeze.dims, aten.slice.Tensor, aten.select.int, aten.alias.default,
    }
)


def view_rejection(node: torch.fx.Node) -> str | None:
    """None for a view of a strided tensor with sizes known from the bound symbols (index
    math); else why it is not one."""
    if node.target not in VIEW_OPS:
        return "not a view op"
    if not isinstance(node.args[0], torch.fx.Node):
        return "a view of a value that is not a graph node"
    val, base = node.meta.get("val"), node.args[0].meta.get("val")
    if not isinstance(val, torch.Tensor) or not isinstance(base, torch.Tensor):
        return "a view whose input or result is not a tensor"
    if val.layout is not torch.strided or base.layout is not torch.strided:
        return f"a view of a {base.layout} tensor (index math needs strided memory)"
    if not _same_storage(val, base):
        return "its traced result does not alias its input (a reshape that copies, or a node a graph pass traced again)"
    if free_unbacked_symbols(val):
        return "a view whose sizes depend on tensor data"
    return None


def _same_storage(val: torch.Tensor, base: torch.Tensor) -> bool:
    try:
        return val.untyped_storage()._cdata == base.untyped_storage()._cdata
    except (RuntimeError, NotImplementedError):
        return False
