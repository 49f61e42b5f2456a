"""Lowerings of ops that write values at positions loaded from an index tensor: index_put
(`x[i] = v`, `x[i] += v`: the backward of embedding and of indexing), scatter and
scatter_add (the backward of gather, nll_loss's), and scatter_reduce's amax and amin into
a tensor of the identity (tl.atomic_max/min; decomp/scatters.py folds the input in).

Such an op's result is its input with some elements replaced or added to. It gets a buffer
it may write: its input's own where nothing else reads the input (a kernel's fresh result,
such as the zeros a backward starts from), else a copy, a clone node inserted before it
(own_buffers) that fuses with the input's producers. A kernel then walks the scattered
elements (x[i]'s, or the index tensor's) and stores each at its position: an indirect
store (ir.Store.bounds), asserted in range as eager raises. Stores move values without
arithmetic: bitwise eager's. Adds (`accumulate`, scatter_add) are tl.atomic_add: under the
interpreter in index order, bitwise eager's on cpu (where eager's cpu kernel adds float16/
bfloat16 in float32, scatter_add and index_add, the graph brings float32 values here:
decomp/scatters.py); on a GPU the adds to one element run
in any order, so float sums may differ from eager's in the last bits and from run to run,
and with torch.use_deterministic_algorithms(True) float adds stay eager. Where one
position is written twice without accumulate, which value wins is unspecified, as in eager.

A scatter into a fill with one position per row (computed_pointwise: nll_loss's gradient)
has no such kernel: each element is computed where it is read, the value where its
coordinate is its row's position, and the position asserted in range (ir.Check).
"""
from __future__ import annotations

from typing import Any

import sympy
import torch
import torch.fx

from .._torch_compat import provably_equal, provably_positive
from . import ir
from .decisions import Decision, DecisionKind
from .gather import _index_rejection, _message, _position, index_positions, indexed_shape
from .indexing import _sizes
from .kernel_builder import Group, KernelBuilder
from .operands import _arg
from .pointwise import FLOATS, READABLE, _names, _scalar_ok, _tensor_rejection, scalar_rejection
from .registry import LOWERINGS
from .space import Space, broadcast_coords, sizes_of, strides_of

aten = torch.ops.aten

# what tl.atomic_add adds, the interpreter's included (it has no bfloat16 one)
ATOMIC_DTYPES = (torch.float32, torch.float16, torch.int32, torch.int64)
# scatter_reduce's reductions that are atomics, and the dtypes tl.atomic_max/min take that
# kernels compute (float16/bfloat16 come as float32: decomp/scatters.py)
ATOMIC_REDUCES = {"amax": "max", "amin": "min"}
EXTREMA_DTYPES = (torch.float32, torch.int32, torch.int64)


# -- checkers ------------------------------------------------------------------------
def _target_rejection(node: torch.fx.Node, x: Any) -> str | None:
    val = node.meta.get("val")
    if (why := _tensor_rejection(val, READABLE, "result")) is not None:
        return why
    if val.dim() == 0:
        return "a 0-dim result"
    if node.kwargs and node.kwargs != {"include_self": True}:  # scatter_reduce's default, written out
        return f"keyword arguments {dict(node.kwargs)}: this lowering takes positional ones"
    if not isinstance(x, torch.fx.Node):
        return "an input that is not a graph node"
    return _tensor_rejection(x.meta.get("val"), READABLE, "input")


def _source_rejection(source: Any, dtype: torch.dtype, what: str) -> str | None:
    if not isinstance(source, torch.fx.Node):
        return f"{what} that are not a graph node"
    if (why := _tensor_rejection(source.meta.get("val"), READABLE, what)) is not None:
        return why
    return None if source.meta["val"].dtype == dtype else f"{what} of another dtype than the input"


def _accumulate_rejection(dtype: torch.dtype) -> str | None:
    if dtype not in ATOMIC_DTYPES:
        return f"adds {str(dtype).removeprefix('torch.')} values; tl.atomic_add takes {_names(ATOMIC_DTYPES)} here"
    if dtype in FLOATS and torch.are_deterministic_algorithms_enabled():
        return ("adds floats with atomics, whose order varies on a GPU, and torch.use_deterministic_algorithms(True) "
                "is set")
    return None


def _check_index_put(node: torch.fx.Node) -> str | None:
    x, indices, values = node.args[:3]
    accumulate = node.args[3] if len(node.args) > 3 else False
    if (why := _target_rejection(node, x)) is not None:
        return why
    given = [i for i in indices if i is not None]
    if not given:
        return "no index tensor"
    for index in given:
        if isinstance(index, torch.fx.Node) and index.meta["val"].dtype in (torch.bool, torch.uint8):
            return "a boolean mask index (its positions depend on the data)"
        if (why := _index_rejection(index)) is not None:
            return why
    dtype = x.meta["val"].dtype
    if (why := _source_rejection(values, dtype, "values")) is not None:
        return why
    if values.meta["val"].dim() > len(indexed_shape(x, indices)):
        return "values with more dims than x[indices]"
    if type(accumulate) is not bool:
        return f"accumulate={accumulate!r} is not a bool"
    return _accumulate_rejection(dtype) if accumulate else None


def _check_scatter(node: torch.fx.Node) -> str | None:
    x, dim, index, source = node.args[:4]
    if node.target is aten.scatter_reduce.two and node.args[4] not in ATOMIC_REDUCES:
        return (f"reduce={node.args[4]!r}: the reductions done by atomics are {sorted(ATOMIC_REDUCES)} (no atomic multiply; "
                "regions decompose sum and mean into scatter_add but for a bool mean, decomp/scatters.py)")
    if (why := _target_rejection(node, x)) is not None:
        return why
    if type(dim) is not int:
        return f"a symbolic dim ({dim})"
    if (why := _index_rejection(index)) is not None:
        return why
    if index.meta["val"].dim() != x.meta["val"].dim():
        return "an index of another rank than the input"
    dtype = x.meta["val"].dtype
    if node.target is aten.scatter.value:
        if not _scalar_ok(source):
            return f"a value {source!r} that is not a Python scalar"
        return scalar_rejection(source, dtype)
    if (why := _source_rejection(source, dtype, "src")) is not None:
        return why
    if node.target is aten.scatter_reduce.two:
        reduce = node.args[4]
        if dtype not in EXTREMA_DTYPES:
            return (f"{reduce} of {str(dtype).removeprefix('torch.')} values; tl.atomic_{ATOMIC_REDUCES[reduce]} takes "
                    f"{_names(EXTREMA_DTYPES)} here")
        if dtype.is_floating_point and not _filled_with_a_number(x):
            return (f"{reduce} into a tensor that may hold a NaN the atomics would pass over (a number's bits decide); "
                    "decomp/scatters.py reduces into a tensor of the identity")
        return None
    return _accumulate_rejection(dtype) if node.target is aten.scatter_add.default else None


def _a_fill(x: Any) -> bool:
    """`x` is a full/full_like node (of any value: a number, NaN, a symbol)."""
    return isinstance(x, torch.fx.Node) and x.target in (aten.full.default, aten.full_like.default)


def computed_pointwise(node: torch.fx.Node) -> bool:
    """A scatter (of src or of a value) into a fill, one position per row along dim
    (index.size(dim) == 1) and the index covering the fill in its other dims: each element
    of the result is computed where it is read (_scatter_pointwise), never stored and
    reloaded. Inductor rewrites it so (scatter_upon_const_tensor): cross-entropy's gradient,
    nll_loss_backward's one -1 per row of logits' zeros. Not where dim may have no
    elements (eager raises for every index there; an empty kernel asserts nothing)."""
    if node.target not in (aten.scatter.src, aten.scatter.value):
        return False
    x, dim, index = node.args[:3]
    if not _a_fill(x):
        return False
    sizes, covered, fake = _sizes(x), _sizes(index), node.meta["val"]
    d = dim % len(sizes)  # sizes equal under the guards and runtime asserts count (falcon's b * (past + t) and b * t)
    return (covered[d] == 1 and all(provably_equal(c, n, fake) for k, (c, n) in enumerate(zip(sizes, covered)) if k != d)
            and provably_positive(sizes[d], fake))


def _filled_with_a_number(x: torch.fx.Node) -> bool:
    """`x` is full/full_like of a number that is not NaN."""
    if not _a_fill(x):
        return False
    value = x.args[1]
    return isinstance(value, (int, float)) and value == value


# -- rules: (position in the result, value, how it combines, what the assert says) ----
Scattered = tuple[tuple[Any, ...], int, str, str]


def _index_put(b: KernelBuilder, node: torch.fx.Node, x: torch.fx.Node, indices: list[Any], values: torch.fx.Node,
               accumulate: bool = False) -> Scattered:
    """x[indices] = values (+= with accumulate): values broadcast to x[indices]'s shape."""
    shape = indexed_shape(x, indices)
    coords = b.element_coords(shape)
    at = index_positions(b, node, x, indices, coords)
    value = b.gather(values, broadcast_coords(coords, shape, sizes_of(values)), None)  # computed here where inlined
    return at, value, "add" if accumulate else "", _message(node, [d for d, t in enumerate(indices) if t is not None])


def _scatter(b: KernelBuilder, node: torch.fx.Node, x: Any, dim: int, index: torch.fx.Node, source: Any,
             reduce: str = "") -> Scattered | int:
    """out[c with dim d replaced by index[c]] = src[c] (or the scalar value), for each
    coordinate c of index; scatter_add adds, scatter_reduce (include_self) takes the
    maximum or minimum. One computed pointwise (computed_pointwise): its element's value."""
    if LOWERINGS.scatter_space(node) is None:
        return _scatter_pointwise(b, node, x, dim, index, source)
    coords = b.element_coords(_sizes(index))
    d = dim % len(coords)
    value = _value_at(b, node, source, coords, None)
    at = coords[:d] + (_position(b, node, index, coords),) + coords[d + 1:]
    combine = "add" if node.target is aten.scatter_add.default else ATOMIC_REDUCES.get(reduce, "")
    return at, value, combine, _message(node, [d])


def _scatter_pointwise(b: KernelBuilder, node: torch.fx.Node, x: Any, dim: int, index: torch.fx.Node, source: Any) -> int:
    """out[c] = src[c'] (or the value) where c[d] is index[c'], else x[c]; c' is c with
    c[d] = 0, the row's one element of index. The position is asserted in range as the
    scatter kernel's store would be (ir.Check): eager raises where it is not."""
    sizes = _sizes(node)
    d = dim % len(sizes)
    coords = b.element_coords(sizes)
    row = coords[:d] + (sympy.Integer(0),) + coords[d + 1:]
    position = _position(b, node, index, row)
    in_range = b.check(((position, sizes[d]),), _message(node, [d]))
    hit = b.all_of([in_range, b.compute("eq", (position, b.index_value(coords[d])), node, torch.bool)], node)
    cdt = ir.compute_dtype(node.meta["val"].dtype)
    return b.compute("where", (hit, _value_at(b, node, source, row, hit), _arg(b, x, cdt, node)), node, cdt)


def _value_at(b: KernelBuilder, node: torch.fx.Node, source: Any, coords: tuple[sympy.Expr, ...], mask: int | None) -> int:
    """The scattered value for index's element at `coords`: src's there (src may be larger
    than index), or the scalar as eager converts it to the result's dtype first."""
    if isinstance(source, torch.fx.Node):
        return b.gather(source, coords, mask)
    dtype = node.meta["val"].dtype
    exact = torch.tensor(source, dtype=dtype).to(ir.compute_dtype(dtype)).item()
    return b.compute("broadcast", (b.constant(exact, ir.compute_dtype(dtype)),), node, ir.compute_dtype(dtype))


def build_scatter(name: str, node: torch.fx.Node, is_view: Any, inlined: frozenset[torch.fx.Node] = frozenset()) -> Group:
    """The kernel storing a scatter node's values into its input's buffer (own_buffers made
    it the node's own), which is the node's result afterwards. A pointwise producer of the
    values that only the scatter reads (inlined) is computed here, never stored."""
    space = Space(LOWERINGS.scatter_space(node))
    b = KernelBuilder(space, None, is_view, name, inlined)
    at, value, accumulate, message = LOWERINGS.rule(node)(b, node, *node.args)
    val = node.meta["val"]
    out = ir.Buffer("out_ptr0", val.dtype, sizes_of(node), strides_of(val), node=node.name)
    bounds = tuple((c, out.sizes[d]) for d, c in enumerate(at) if isinstance(c, int))
    index = sum(((ir.value_symbol(c) if isinstance(c, int) else c) * st for c, st in zip(at, out.strides)), sympy.Integer(0))
    kernel = ir.Kernel(
        name, sympy.Mul(*space.sizes), tuple(b.inputs.values()), (out,), tuple(b.values),
        (ir.Store(out.name, index, value, bounds, message, accumulate),), (node.name,),
        lifted=tuple((s, e) for e, s in b.lifted.items()),
    )
    return Group(ir.verify(ir.lift_sizes(kernel)), (node,), (node,), tuple(b.inputs), into=node.args[0], inlined=tuple(b.recomputed))


def own_buffers(gm: torch.fx.GraphModule, decisions: dict[str, Decision]) -> bool:
    """Give each scatter kernel node an input it may write in place: where anything else
    reads the input (or it is a graph input, an eager result that may alias, a view), a
    clone node inserted after the input (before the scatter for a graph input) makes the
    copy it writes. Returns whether the
    graph changed (the decisions then list the clones, in graph order)."""
    changed = False
    for node in list(gm.graph.nodes):
        decision = decisions.get(node.name)
        if decision is None or decision.kind is not DecisionKind.KERNEL or LOWERINGS.scatter_space(node) is None:
            continue
        x = node.args[0]
        if _writable(x, node, decisions):
            continue
        # right after a computed input, so that the copy joins its kernel (no second read)
        with gm.graph.inserting_before(node) if x.op == "placeholder" else gm.graph.inserting_after(x):
            copy = gm.graph.call_function(aten.clone.default, (x,))
        copy.meta["val"] = node.meta["val"]  # the copy has the result's layout
        node.args = (copy, *node.args[1:])
        decisions[copy.name] = Decision(copy.name, str(aten.clone.default), DecisionKind.KERNEL,
                                        note=f"a copy of {x.name} for {node.name} to scatter into")
        changed = True
    if changed:
        ordered = {n.name: decisions[n.name] for n in gm.graph.nodes if n.name in decisions}
        decisions.clear()
        decisions.update(ordered)
    return changed


def _writable(x: torch.fx.Node, node: torch.fx.Node, decisions: dict[str, Decision]) -> bool:
    """Whether a scatter may write `x`'s buffer: a kernel result (fresh memory) with the
    result's layout that only this scatter reads, and not as its index or values too."""
    decision = decisions.get(x.name)
    if x.op != "call_function" or decision is None or decision.kind is not DecisionKind.KERNEL:
        return False
    val = x.meta.get("val")
    if not isinstance(val, torch.Tensor) or val.stride() != node.meta["val"].stride() or list(x.users) != [node]:
        return False
    others = [a for arg in node.args[1:] for a in (arg if isinstance(arg, (list, tuple)) else [arg])]
    return x not in others


# the values (src) are read through KernelBuilder.gather: a pointwise producer only the scatter reads is computed in its
# kernel; a scatter's index tensor too, and one computed pointwise (computed_pointwise) is in no scatter space
LOWERINGS.register(aten.index_put.default, aten._unsafe_index_put.default, checker=_check_index_put, inlines=(2,),
                   scatter=lambda node: indexed_shape(node.args[0], node.args[1]))(_index_put)
LOWERINGS.register(aten.scatter.src, aten.scatter.value, aten.scatter_add.default, aten.scatter_reduce.two, checker=_check_scatter,
                   gathers=(2, 3), inlines=True, places=True,
                   scatter=lambda node: None if computed_pointwise(node) else _sizes(node.args[2]))(_scatter)
