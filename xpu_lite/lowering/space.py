"""Iteration spaces and index math: a kernel's Space, the sizes and strides of graph values
as sympy expressions, an element's coordinates (flat, per space, per transpose tile) and
its offset in a tensor broadcast to the kernel's shape; and which chains of views read a
kernel's value in place (same_elements) or in its row-major order (reshapes), so that
fusion reads it from registers.

Input: fake tensors' SymInt sizes and strides. Output: sympy expressions of the size
symbols and the kernel's index symbols (ir.XINDEX, ir.RINDEX), which the rules and
KernelBuilder (kernel_builder.py) put into loads and stores.
"""
from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from typing import Any

import sympy
import torch
import torch.fx

from .._torch_compat import FloorDiv, ModularIndexing, provably_equal, statically_known_true, sym_expr
from . import ir

aten = torch.ops.aten


@dataclasses.dataclass(frozen=True)
class Space:
    """A kernel's iteration space: `sizes` (pointwise: the output; reduction: the reduced
    input) and the reduced dims (empty for a pointwise kernel)."""

    sizes: tuple[sympy.Expr, ...]
    rdims: tuple[int, ...] = ()
    # members' shapes hold the same elements (a reduction's: its input's) in the same
    # row-major order only as reshapes of each other ((b, t, h, d) and (b, t, h * d)): each
    # value is computed at its flat position (KernelBuilder.coords); not tiled, and no
    # reduction runs ahead of such a pointwise space (fusion._reduction_ahead)
    reshaped: bool = False

    @property
    def row_shapes(self) -> tuple[tuple[sympy.Expr, ...], ...]:
        """Shapes of per-row values: reduced dims kept as 1, or squeezed."""
        keep = tuple(sympy.Integer(1) if d in self.rdims else s for d, s in enumerate(self.sizes))
        return keep, tuple(s for d, s in enumerate(self.sizes) if d not in self.rdims)


def view_root(node: torch.fx.Node, is_view: Any) -> torch.fx.Node:
    while is_view(node):
        node = node.args[0]
    return node


def sizes_of(node: torch.fx.Node) -> tuple[sympy.Expr, ...]:
    val = node.meta["val"]
    if isinstance(val, (tuple, list)):  # a pointwise op with several outputs of one shape (max_pool2d_with_indices)
        val = val[0]
    return tuple(sym_expr(s) for s in val.shape)


def strides_of(val: torch.Tensor) -> tuple[sympy.Expr, ...]:
    return tuple(sym_expr(s) for s in val.stride())


def contiguous_strides(sizes: tuple[sympy.Expr, ...]) -> tuple[sympy.Expr, ...]:
    strides, running = [], sympy.Integer(1)
    for size in reversed(sizes):
        strides.append(running)
        running = running * size
    return tuple(reversed(strides))


def flat_coords(index: sympy.Symbol, sizes: tuple[sympy.Expr, ...]) -> tuple[sympy.Expr, ...]:
    """Coordinates of flat (row-major) position `index` in a tensor of `sizes`."""
    if len(sizes) == 1:
        return (index,)
    inner = contiguous_strides(sizes)
    return tuple(FloorDiv(index, inner[0]) if d == 0 else ModularIndexing(index, inner[d], size) for d, size in enumerate(sizes))


def space_coords(space: Space) -> tuple[sympy.Expr, ...]:
    """Coordinates of element (xindex, rindex) of a space: xindex walks the kept dims,
    rindex the reduced ones, each row-major."""
    if not space.rdims:
        return flat_coords(ir.XINDEX, space.sizes)
    kept = [d for d in range(len(space.sizes)) if d not in space.rdims]
    x = flat_coords(ir.XINDEX, tuple(space.sizes[d] for d in kept)) if kept else ()
    r = flat_coords(ir.RINDEX, tuple(space.sizes[d] for d in space.rdims))
    coords: list[sympy.Expr] = [sympy.Integer(0)] * len(space.sizes)
    for d, c in zip(kept, x):
        coords[d] = c
    for d, c in zip(space.rdims, r):
        coords[d] = c
    return tuple(coords)


def same_shape(a: tuple[sympy.Expr, ...], b: tuple[sympy.Expr, ...],
               equal: Callable[[sympy.Expr, sympy.Expr], bool] = operator.eq) -> bool:
    """Whether shapes `a` and `b` are the same, dim by dim `equal` (under the guards, for
    fusion and the kernels it builds alike)."""
    return a == b or (len(a) == len(b) and all(map(equal, a, b)))


def same_elements_shape(a: tuple[sympy.Expr, ...], b: tuple[sympy.Expr, ...],
                        equal: Callable[[sympy.Expr, sympy.Expr], bool] = operator.eq) -> bool:
    """Whether shapes `a` and `b` hold the same elements in the same row-major order: they
    differ only by dims of size 1 (`(n, 1)` and `(n,)`), the others `equal` in order."""
    a, b = [s for s in a if s != 1], [s for s in b if s != 1]
    return len(a) == len(b) and all(equal(m, n) for m, n in zip(a, b))


def coords_as(coords: tuple[sympy.Expr, ...], sizes: tuple[sympy.Expr, ...], shape: tuple[sympy.Expr, ...]) -> tuple[sympy.Expr, ...]:
    """`coords` of an element of `sizes` as its coordinates in `shape`, which holds the same
    elements (same_elements_shape): the dims that are not 1 in order, 0 along the others."""
    moving = iter([c for c, s in zip(coords, sizes) if s != 1])
    return tuple(sympy.Integer(0) if s == 1 else next(moving) for s in shape)


def broadcast_coords(coords: tuple[sympy.Expr, ...], sizes: tuple[sympy.Expr, ...],
                     shape: tuple[sympy.Expr, ...]) -> tuple[sympy.Expr, ...]:
    """`coords` of an element of `sizes` as its coordinates in a value of `shape` broadcast
    (aligned right) to it: 0 along a dim of 1 against a longer one."""
    lead = len(sizes) - len(shape)
    return tuple(sympy.Integer(0) if n == 1 and sizes[lead + d] != 1 else coords[lead + d] for d, n in enumerate(shape))


def reshaped_coords(coords: tuple[sympy.Expr, ...], sizes: tuple[sympy.Expr, ...], shape: tuple[sympy.Expr, ...]) -> tuple[sympy.Expr, ...]:
    """`coords` of an element of `sizes` as its coordinates in `shape`, a reshape of it (as
    many elements): its flat row-major position, unravelled."""
    flat = sum((c * s for c, s in zip(coords, contiguous_strides(sizes))), sympy.Integer(0))
    return flat_coords(flat, shape)


def index_expr(out_sizes: tuple[sympy.Expr, ...], sizes: tuple[sympy.Expr, ...], strides: tuple[sympy.Expr, ...],
               coords: tuple[sympy.Expr, ...] | None = None) -> sympy.Expr:
    """Memory offset of the element at `coords` (default: flat position xindex) of
    `out_sizes`, for a tensor with `sizes`/`strides` broadcast (aligned right) to it."""
    if not out_sizes:
        return sympy.Integer(0)  # a 0-dim value: its one element, whatever the kernel's position
    if coords is None:
        if sizes == out_sizes and strides == contiguous_strides(out_sizes):
            return ir.XINDEX
        coords = flat_coords(ir.XINDEX, out_sizes)
    return sum((c * s for c, s in zip(coords, _space_strides(out_sizes, sizes, strides))), sympy.Integer(0))


def _space_strides(space_sizes: tuple[sympy.Expr, ...], sizes: tuple[sympy.Expr, ...],
                   strides: tuple[sympy.Expr, ...]) -> list[sympy.Expr]:
    """A tensor's stride along each dim of the space it is broadcast (aligned right) to; 0
    where it broadcasts."""
    rank = len(space_sizes)
    eff: list[sympy.Expr] = [sympy.Integer(0)] * rank
    for d, (size, stride) in enumerate(zip(sizes, strides)):
        out_dim = rank - len(sizes) + d
        if not (size == 1 and space_sizes[out_dim] != 1):
            eff[out_dim] = stride
    return eff


def _flat(eff: list[sympy.Expr], space_sizes: tuple[sympy.Expr, ...], dims: list[int]) -> bool:
    """Whether dims (in order, size-1 dims skipped) are laid out row-major, so their flat
    position times the last one's stride is the offset."""
    live = [d for d in dims if space_sizes[d] != 1]
    return all(sympy.expand(eff[a] - eff[b] * space_sizes[b]) == 0 for a, b in zip(live, live[1:]))


def choose_tile(space: Space, reads: list[tuple[tuple[sympy.Expr, ...], tuple[sympy.Expr, ...]]],
                writes: list[tuple[tuple[sympy.Expr, ...], tuple[sympy.Expr, ...]]]) -> ir.Tile | None:
    """Tile a pointwise space when some tensor it reads is contiguous along a dim `u` other
    than the last (a transpose) while everything it writes is row-major over the dims after
    `u` with unit stride at the end: yindex then walks u, xindex the dims after it, and both
    the transposed loads and the stores are contiguous. (sizes, strides) of each tensor."""
    sizes = space.sizes
    live = [d for d in range(len(sizes)) if sizes[d] != 1]
    if space.rdims or len(live) < 2:
        return None
    written = [_space_strides(sizes, *w) for w in writes]
    for read in reads:
        eff = _space_strides(sizes, *read)
        unit = [d for d in live if eff[d] == 1]
        if not unit or unit[0] == live[-1] or eff[live[-1]] == 0:
            continue  # row-major already, or broadcast along the last dim (a per-row value): one address per row
        u = unit[0]
        after = [d for d in live if d > u]
        if all(w[after[-1]] == 1 and w[u] != 1 and _flat(w, sizes, after) for w in written):
            return ir.Tile(u, sympy.Mul(*sizes[:u]), sizes[u], sympy.Mul(*sizes[u + 1:]))
    return None


def tiled_index(tile: ir.Tile, space_sizes: tuple[sympy.Expr, ...], sizes: tuple[sympy.Expr, ...],
                strides: tuple[sympy.Expr, ...]) -> sympy.Expr:
    """Memory offset of element (zindex, yindex, xindex) of a tiled space for a tensor with
    `sizes`/`strides` broadcast to it. Dims after the tile's are one flat xindex where the
    tensor lays them out row-major (no div/mod, so Triton sees the contiguity)."""
    eff = _space_strides(space_sizes, sizes, strides)
    u = tile.dim
    z = flat_coords(ir.ZINDEX, space_sizes[:u]) if u else ()
    offset = sum((c * eff[d] for d, c in enumerate(z)), sympy.Integer(0)) + ir.YINDEX * eff[u]
    after = list(range(u + 1, len(space_sizes)))
    live = [d for d in after if space_sizes[d] != 1]
    if _flat(eff, space_sizes, after):
        return offset + (ir.XINDEX * eff[live[-1]] if live else 0)
    x = flat_coords(ir.XINDEX, space_sizes[u + 1:])
    return offset + sum((c * eff[d] for d, c in zip(after, x)), sympy.Integer(0))


def slice_map(view: torch.fx.Node) -> tuple[int, sympy.Expr, sympy.Expr] | None:
    """(dim, start, step) of a `slice` view: its element k along dim is its input's element
    start + k * step there (the other coordinates the same), read off the fake tensors'
    strides and offsets, as torch normalized them. None for another view, or where they do
    not say (a stride of 0, an offset no whole multiple of the stride)."""
    if view.target is not torch.ops.aten.slice.Tensor or not isinstance(view.args[0], torch.fx.Node):
        return None
    val, src = view.meta["val"], view.args[0].meta["val"]
    d = (view.args[1] if len(view.args) > 1 else 0) % src.dim()
    stride = sym_expr(src.stride(d))
    if stride == 0:
        return None
    start = sympy.simplify((sym_expr(val.storage_offset()) - sym_expr(src.storage_offset())) / stride)
    step = sympy.simplify(sym_expr(val.stride(d)) / stride)
    if any(sympy.fraction(e)[1] != 1 or not e.is_integer for e in (start, step)):
        return None
    return d, start, step


def permute_dims(view: torch.fx.Node) -> tuple[int, ...] | None:
    """The dims of a `permute` view, normalized (its dim d is its input's dims[d]); None for
    another view."""
    if view.target is not torch.ops.aten.permute.default or not isinstance(view.args[0], torch.fx.Node) or not view.args[1]:
        return None
    return tuple(d % len(view.args[1]) for d in view.args[1])


def unpermuted(dims: tuple[int, ...], coords: tuple[sympy.Expr, ...]) -> tuple[sympy.Expr, ...]:
    """`coords` of an element of a permute view (permute_dims `dims`) as its input's."""
    at: list[sympy.Expr] = [sympy.Integer(0)] * len(dims)
    for d, source in enumerate(dims):
        at[source] = coords[d]
    return tuple(at)


def keeps_last_dim(view: torch.fx.Node) -> bool:
    """A permute that keeps the last dim last: read through it, a value is still read and
    stored contiguously along that dim (a transpose that moves it is a tiled copy, which
    a kernel computing the value at the copy's coordinates would not be)."""
    dims = permute_dims(view)
    return dims is not None and dims[-1] == len(dims) - 1


_RESHAPES = frozenset({aten.view.default, aten._unsafe_view.default, aten.reshape.default})


def last_dim_split(view: torch.fx.Node) -> sympy.Expr | None:
    """q where a reshape splits its input's last dim n into (n / q, q), the other dims as
    they are (`view_as_complex`'s `x.reshape(..., -1, 2)`): its element (..., k, j) is its
    input's (..., k * q + j). None for another view."""
    if view.target not in _RESHAPES or not isinstance(view.args[0], torch.fx.Node):
        return None
    sizes, source = sizes_of(view), sizes_of(view.args[0])
    if not source or len(sizes) != len(source) + 1 or sizes[:-2] != source[:-1]:
        return None
    if not provably_equal(sizes[-2] * sizes[-1], source[-1], view.meta["val"]):
        return None
    return sizes[-1]


def maps_coordinates(view: torch.fx.Node) -> bool:
    """A slice, a permute that keeps the last dim, or a reshape that splits the last dim:
    KernelBuilder._recompute maps an element's coordinates through it to its input's."""
    return slice_map(view) is not None or keeps_last_dim(view) or last_dim_split(view) is not None


def mapped_root(view: torch.fx.Node, is_view: Any) -> torch.fx.Node | None:
    """What a chain of views that map coordinates (maps_coordinates) reads; None where
    another view stands in it, or `view` is no view."""
    node = view
    while is_view(node):
        if not maps_coordinates(node):
            return None
        node = node.args[0]
    return node if node is not view else None


# views that keep the row-major order of elements: a row value read through one is itself
ORDER_PRESERVING = frozenset({aten.view.default, aten.reshape.default, aten._unsafe_view.default, aten.alias.default, aten.detach.default,
                              aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default, aten.unsqueeze.default})


def reshaped_element(view: torch.fx.Node, space: Space, is_view: Any) -> bool:
    """Whether a view reshapes a value of the kernel of `space` to one read at the same flat
    position: any reshape in a pointwise run; in a reduction over a reshaped run's
    elements, one with as many elements as the space (not a row value)."""
    if not reshapes(view, is_view):
        return False
    return not space.rdims or space.reshaped and provably_equal(sympy.Mul(*sizes_of(view)), sympy.Mul(*space.sizes), view.meta["val"])


def reshapes(view: torch.fx.Node, is_view: Any) -> bool:
    """Whether a chain of views only reshapes its root (keeps its row-major order)."""
    while is_view(view):
        if view.target not in ORDER_PRESERVING:
            return False
        view = view.args[0]
    return True


def views_of(nodes: list[torch.fx.Node], is_view: Any) -> set[torch.fx.Node]:
    """The views of `nodes`, and views of those."""
    found: set[torch.fx.Node] = set()
    todo = [user for node in nodes for user in node.users]
    while todo:
        user = todo.pop()
        if is_view(user) and user not in found:
            found.add(user)
            todo += list(user.users)
    return found


def same_elements(view: torch.fx.Node, root: torch.fx.Node, ones_apart: bool = False) -> bool:
    """Whether a chain of views reads every element of its root at the root's own
    coordinates: the same sizes, strides (where a size is not 1) and storage offset. A
    value computed in the kernel is read through it as itself. `ones_apart`: the sizes
    may also differ by dims of size 1 (`squeeze`, `unsqueeze`): the same elements in the
    same flat order, which is how a pointwise kernel computes every value."""
    val, base = view.meta["val"], root.meta["val"]
    if not isinstance(base, torch.Tensor) or (val.dim() != base.dim() and not ones_apart):
        return False
    same = lambda a, b: statically_known_true(a == b)  # noqa: E731  (2*(s//2) is s where a guard says s is even)
    dims = lambda t: [(n, st) for n, st in zip(t.shape, t.stride()) if not same(n, 1)]  # noqa: E731
    ours, theirs = dims(val), dims(base)
    return (len(ours) == len(theirs)
            and all(same(n, m) and same(a, b) for (n, a), (m, b) in zip(ours, theirs))
            and same(val.storage_offset(), base.storage_offset()))
