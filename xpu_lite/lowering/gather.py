"""Lowerings of ops that read their input at positions loaded from an index tensor:
embedding, gather, index_select and advanced indexing with integer tensors (index.Tensor).

Each element loads its position from the index tensor, then the input's element there: an
indirect load (ir.Load.bounds). Eager raises IndexError for a position out of range; the
kernel asserts it (tl.device_assert, compiled in: runtime.gpu_launch_options) and loads
nothing where it fails, so no lane reads outside the input. index.Tensor counts a negative
position from the end, as eager does; the others take none. Values move without
arithmetic: results are bitwise eager's.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sympy
import torch
import torch.fx

from .indexing import _rejection, _sizes
from .pointwise import INTS, _out_cdt, _tensor_rejection
from .registry import LOWERINGS

aten = torch.ops.aten


# -- checkers ------------------------------------------------------------------------
def _index_rejection(index: Any, dtypes: tuple[torch.dtype, ...] = INTS) -> str | None:
    if not isinstance(index, torch.fx.Node):
        return "an index that is not a graph node"
    return _tensor_rejection(index.meta.get("val"), dtypes, "index")


def _check_embedding(node: torch.fx.Node) -> str | None:
    weight, indices = node.args[:2]
    if (why := _rejection(node, [weight], {})) or (why := _index_rejection(indices)):
        return why
    return None if weight.meta["val"].dim() == 2 else "a weight that is not 2-D"


def _check_gather(node: torch.fx.Node) -> str | None:
    x, dim, index = node.args[:3]
    if (why := _rejection(node, [x], {"dim": dim})) or (why := _index_rejection(index)):
        return why
    return "a 0-dim input" if x.meta["val"].dim() == 0 else None


def _check_index_select(node: torch.fx.Node) -> str | None:
    x, dim, index = node.args[:3]
    if (why := _rejection(node, [x], {"dim": dim})) or (why := _index_rejection(index)):
        return why
    return "a 0-dim input" if x.meta["val"].dim() == 0 else None


def _check_index(node: torch.fx.Node) -> str | None:
    x, indices = node.args[:2]
    if (why := _rejection(node, [x], {})) is not None:
        return why
    given = [i for i in indices if i is not None]
    if not given:
        return "no index tensor"
    for index in given:
        if (why := _index_rejection(index)) is not None:
            return why
    return None


# -- rules -----------------------------------------------------------------------------
def _message(node: torch.fx.Node, dims: list[int]) -> str:
    named = f"dimension {dims[0]}" if len(dims) == 1 else f"dimensions {dims}"
    return f"{node.name}: index out of range for {named} of the input"


def _position(b: Any, node: torch.fx.Node, index: torch.fx.Node, at: tuple[sympy.Expr, ...]) -> int:
    """The index tensor's element at `at`, as an int64 value."""
    return b.cast(b.gather(index, at, None), torch.int64, node)


def _embedding(b: Any, node: torch.fx.Node, weight: torch.fx.Node, indices: torch.fx.Node, *rest: Any) -> int:
    """out[..., j] = weight[indices[...], j] (padding_idx and the rest act on the gradient)."""
    coords = b.element_coords(_sizes(node))
    row = _position(b, node, indices, coords[:-1])
    return b.cast(b.gather_at(weight, (row, coords[-1]), _message(node, [0])), _out_cdt(node), node)


def _gather(b: Any, node: torch.fx.Node, x: torch.fx.Node, dim: int, index: torch.fx.Node, *rest: Any) -> int:
    """out[c] = x[c with dim d replaced by index[c]] (index may be smaller than x elsewhere)."""
    coords = b.element_coords(_sizes(node))
    d = dim % len(coords)
    at = _position(b, node, index, coords)
    return b.cast(b.gather_at(x, coords[:d] + (at,) + coords[d + 1:], _message(node, [d])), _out_cdt(node), node)


def _index_select(b: Any, node: torch.fx.Node, x: torch.fx.Node, dim: int, index: torch.fx.Node) -> int:
    """out[c] = x[c with dim d replaced by index[c[d]]] (index 1-D, or 0-dim: one position)."""
    coords = b.element_coords(_sizes(node))
    d = dim % len(coords)
    at = _position(b, node, index, coords[d:d + 1] if index.meta["val"].dim() else ())
    return b.cast(b.gather_at(x, coords[:d] + (at,) + coords[d + 1:], _message(node, [d])), _out_cdt(node), node)


def _index(b: Any, node: torch.fx.Node, x: torch.fx.Node, indices: list[Any]) -> int:
    """x[..., i, j, ...]: the index tensors broadcast together, their dims in place of the
    dims they index when those are adjacent, else first (numpy's rule, as eager); a
    negative position counts from the end."""
    at = index_positions(b, node, x, indices, b.element_coords(_sizes(node)))
    dims = [d for d, t in enumerate(indices) if t is not None]
    return b.cast(b.gather_at(x, at, _message(node, dims)), _out_cdt(node), node)


def indexed_shape(x: torch.fx.Node, indices: list[Any]) -> tuple[sympy.Expr, ...]:
    """The shape of x[indices] (index tensors and None for a whole dim)."""
    sizes = _sizes(x)
    dims = [d for d, t in enumerate(indices) if t is not None]
    shape = _broadcast([_sizes(indices[d]) for d in dims])
    rest = [s for d, s in enumerate(sizes) if d not in dims]
    k = dims[0] if dims == list(range(dims[0], dims[-1] + 1)) else 0  # where the broadcast dims go
    return (*rest[:k], *shape, *rest[k:])


def index_positions(b: Any, node: torch.fx.Node, x: torch.fx.Node, indices: list[Any],
                    coords: tuple[sympy.Expr, ...]) -> tuple[Any, ...]:
    """The position in x of the element at `coords` of x[indices]: a coordinate for each
    dim no tensor indexes, an int64 value (loaded, negatives wrapped) for each it does."""
    sizes = _sizes(x)
    dims = [d for d, t in enumerate(indices) if t is not None]
    shape = _broadcast([_sizes(indices[d]) for d in dims])
    k = dims[0] if dims == list(range(dims[0], dims[-1] + 1)) else 0
    at_index = coords[k:k + len(shape)]
    rest = iter(coords[:k] + coords[k + len(shape):])  # the dims no tensor indexes, in order
    at: list[Any] = []
    for d in range(len(sizes)):
        if d not in dims:
            at.append(next(rest))
            continue
        index_sizes = _sizes(indices[d])
        own = at_index[len(shape) - len(index_sizes):]
        position = _position(b, node, indices[d], tuple(
            sympy.Integer(0) if size == 1 and full != 1 else c
            for c, size, full in zip(own, index_sizes, shape[len(shape) - len(index_sizes):])))
        negative = b.compute("lt", (position, b.constant(0, torch.int64)), node, torch.bool)
        wrapped = b.compute("add", (position, b.index_value(sizes[d])), node, torch.int64)
        at.append(b.compute("where", (negative, wrapped, position), node, torch.int64))
    return tuple(at)


def _broadcast(shapes: list[tuple[sympy.Expr, ...]]) -> tuple[sympy.Expr, ...]:
    rank = max(map(len, shapes))
    padded = [(sympy.Integer(1),) * (rank - len(s)) + s for s in shapes]
    return tuple(next((s for s in column if s != 1), sympy.Integer(1)) for column in zip(*padded))


def _reg(target: Any, check: Callable[[torch.fx.Node], str | None], rule: Callable[..., int], table: int, index: int) -> None:
    """`table`: the argument loaded at loaded positions; `index`: the index tensor (a list
    for index.Tensor), loaded through KernelBuilder.gather, so a pointwise producer of it is
    computed there (inlining.inlined_producers: `(ids + 2).long()` before an embedding); one
    of the lookup's own shape, which the rule reads at the element's own coordinates, is
    read in registers where the same pointwise kernel computes it (index_in_place)."""
    LOWERINGS.register(target, checker=check, gathers=(table, index), coordinates=True, inlines=(index,),
                       index_in_place=True)(rule)


_reg(aten.embedding.default, _check_embedding, _embedding, 0, 1)
_reg(aten.gather.default, _check_gather, _gather, 0, 2)
_reg(aten.index_select.default, _check_index_select, _index_select, 0, 2)
_reg(aten.index.Tensor, _check_index, _index, 0, 1)
