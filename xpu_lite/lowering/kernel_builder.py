"""A group of graph nodes -> ir.Kernel: KernelBuilder, the context every lowering rule
builds its values in (index math from space.py), and build_group. fusion.py decides the
groups; this builds each one.
"""
from __future__ import annotations

import dataclasses
import operator
from typing import Any

import sympy
import torch
import torch.fx

from .._torch_compat import provably_equal, sym_expr
from ..held_values import held_value
from . import ir
from .registry import LOWERINGS
from .space import (Space, broadcast_coords, choose_tile, coords_as, flat_coords, index_expr, last_dim_split, permute_dims,
                    reshaped_coords, same_elements_shape, same_shape, sizes_of, slice_map, space_coords, strides_of,
                    tiled_index, unpermuted, view_root)


@dataclasses.dataclass(frozen=True)
class Group:
    kernel: ir.Kernel
    members: tuple[torch.fx.Node, ...]
    stored: tuple[torch.fx.Node, ...]  # members read outside the group, in kernel.outputs order
    external: tuple[torch.fx.Node, ...]  # tensors loaded, in kernel.inputs order
    # a scatter's group: the node whose buffer the kernel updates in place (no allocation; the
    # stored node is that buffer afterwards, and nothing else reads it: scatter.own_buffers)
    into: torch.fx.Node | None = None
    # pointwise producers computed where a member gathers them, not stored (inlining.inlined_producers)
    inlined: tuple[torch.fx.Node, ...] = ()


# comparisons and logic of integer constants, computed while building the kernel, so that no
# mask is a Python bool in the kernel: the interpreter cannot `&` one with a lane mask
_BOOL_FOLDS: dict[str, Any] = {
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
    "logical_and": lambda a, b: bool(a) and bool(b), "logical_or": lambda a, b: bool(a) or bool(b),
    "logical_xor": lambda a, b: bool(a) != bool(b), "logical_not": lambda a: not a,
}
_ABSORBING = {"logical_and": False, "logical_or": True}  # the constant that decides the result alone

# 0-dim host tensors of these dtypes are kernel arguments by value (ir.Buffer.by_value)
BY_VALUE_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


class KernelBuilder:
    def __init__(self, space: Space, tile: ir.Tile | None = None, is_view: Any = lambda node: False, name: str = "kernel",
                 inlined: frozenset[torch.fx.Node] = frozenset(), equal: Any = operator.eq) -> None:
        self.space = space
        self.equal = equal  # sizes equal for every input (fusion joins pointwise runs of such shapes)
        self.tile = tile
        self.is_view = is_view
        self.name = name
        self.lifted: dict[sympy.Expr, sympy.Symbol] = {}  # sizes the wrapper computes (see wrapper_size)
        self.values: list[ir.Value] = []
        self.inputs: dict[torch.fx.Node, ir.Buffer] = {}
        self.known: dict[tuple[Any, ...], int] = {}  # pure values already computed (see _add)
        self.ordered = False  # see in_order
        self.inlined = inlined  # pointwise producers computed where they are gathered (inlining.inlined_producers)
        self.recomputed: dict[torch.fx.Node, None] = {}  # those this kernel computed, in order
        # a placing op computed where it is gathered: its coordinates there and the lanes
        # that read it (see _recompute), innermost last
        self.placed_at: list[tuple[tuple[sympy.Expr, ...], int | None]] = []
        self.reader: torch.fx.Node | None = None  # the node whose rule is running (see apply)
        self.computed: dict[torch.fx.Node, Any] = {}  # the group's members' values so far (build_group)
        self.in_registers: set[torch.fx.Node] = set()  # members gathered in registers (see gather)

    def coords(self, shape: tuple[sympy.Expr, ...]) -> tuple[sympy.Expr, ...] | None:
        """Coordinates of the current element in a value of `shape`: the space's own (per
        element; also in a shape that differs from the space's only by dims of size 1, as a
        gather's `(n, 1)` before a sum over n), or xindex over the row shape (per row).
        None: the plain flat xindex."""
        if not self.space.rdims:
            return None
        if same_shape(shape, self.space.sizes, self.equal):  # (as fusion joined it: equal under the guards, a
            return space_coords(self.space)  # data-dependent size asserted to be 1 too)
        if shape not in self.space.row_shapes and same_elements_shape(shape, self.space.sizes, self.equal):
            return coords_as(space_coords(self.space), self.space.sizes, shape)
        if self.space.reshaped and shape not in self.space.row_shapes and self.equal(sympy.Mul(*shape), sympy.Mul(*self.space.sizes)):
            return reshaped_coords(space_coords(self.space), self.space.sizes, shape)  # a value of the input, reshaped
        return flat_coords(ir.XINDEX, shape)

    def index(self, at: tuple[sympy.Expr, ...], sizes: tuple[sympy.Expr, ...], strides: tuple[sympy.Expr, ...]) -> sympy.Expr:
        """Offset of the current element of a value of shape `at` in a tensor with
        `sizes`/`strides` broadcast to it."""
        if self.tile is not None and same_shape(at, self.space.sizes, self.equal):
            return tiled_index(self.tile, at, sizes, strides)
        return index_expr(at, sizes, strides, self.coords(at))

    def _add(self, value: ir.Value) -> int:
        """The value's index; a constant, size expression or computation already in the
        kernel is not computed again (it keeps its first node's name)."""
        key = _pure_key(value)
        if key is not None and key in self.known:
            return self.known[key]
        self.values.append(value)
        if key is not None:
            self.known[key] = len(self.values) - 1
        return len(self.values) - 1

    def load(self, node: torch.fx.Node, at: tuple[sympy.Expr, ...], root: torch.fx.Node | None = None) -> int:
        """Load `node`'s elements broadcast to shape `at` (the reader's); for a view, read
        its root buffer with the view's strides (a load made before is that value: _add)."""
        index = self.index(at, sizes_of(node), strides_of(node.meta["val"]))
        return self._load(node, node if root is None else root, index)

    def _load(self, node: torch.fx.Node, root: torch.fx.Node, index: sympy.Expr, mask: int | None = None,
              bounds: tuple[tuple[int, sympy.Expr], ...] = (), message: str = "") -> int:
        """A Load of `node` from its root's buffer (an input of the kernel from now on),
        `index` being the element's offset in `node`."""
        val, root_val = node.meta["val"], root.meta["val"]
        if mask is not None and (known := self._known_int(mask)) is not None:
            if not known:  # no lane loads: the masked load's `other`
                return self.constant(ir.convert_scalar(0, ir.compute_dtype(val.dtype)), ir.compute_dtype(val.dtype))
            mask = None
        if root not in self.inputs:
            by_value = root_val.dim() == 0 and root_val.device.type == "cpu" and root_val.dtype in BY_VALUE_DTYPES
            name = f"in_val{len(self.inputs)}" if by_value else f"in_ptr{len(self.inputs)}"
            self.inputs[root] = ir.Buffer(name, root_val.dtype, sizes_of(root), strides_of(root_val), by_value, root.name)
        offset = sym_expr(val.storage_offset()) - sym_expr(root_val.storage_offset()) if root is not node else 0
        return self._add(ir.Load(self.inputs[root].name, index + offset, ir.compute_dtype(val.dtype), mask, bounds, message))

    def element_coords(self, shape: tuple[sympy.Expr, ...]) -> tuple[sympy.Expr, ...]:
        """Coordinates of the current element in an untiled space of `shape`: a pointwise
        one, or a reduction's per element (xindex, rindex): its input's, before it reduces
        (fusion._takes_as_prologue), or a space of a rule's own (an adaptive pool's). For a
        placing op computed where another op gathers it: the coordinates it is read at."""
        if self.placed_at:
            return self.placed_at[-1][0]
        assert self.tile is None and (self.space.reshaped or same_elements_shape(shape, self.space.sizes, self.equal))
        return self.coords(shape) or flat_coords(ir.XINDEX, shape)

    def gather(self, node: torch.fx.Node, coords: tuple[sympy.Expr, ...], mask: int | None) -> int:
        """Load `node`'s element at `coords` (one per dim of node) in the lanes where bool
        value `mask` is true (None: every lane); a view reads its root buffer. A producer
        fusion inlined is computed there instead, from its inputs loaded there, and a value
        the kernel computes, read at the element's own coordinates, is taken from registers
        (_in_registers). Inside a placing op computed so, only the lanes that read it load."""
        if self.placed_at and (outer := self.placed_at[-1][1]) is not None:
            mask = outer if mask is None else self.all_of([mask, outer], node)
            self.placed_at.append((self.placed_at[-1][0], None))  # what it reads in turn is under `mask` already
            try:
                return self.gather(node, coords, mask)
            finally:
                self.placed_at.pop()
        value = self._in_registers(node, coords)
        if value is None and node in self.inlined:
            value = self._recompute(node, coords, mask)
        if value is not None:  # a half value as the reader reads it: rounded where it promotes (cat)
            value = _leaving_its_dtype(self, value, node, self.reader) if self.reader is not None else value
            if mask is None:
                return value
            zero = self.constant(ir.convert_scalar(0, self.dtype(value)), self.dtype(value))
            return self.compute("where", (mask, value, zero), node, self.dtype(value))  # as a masked load reads 0
        index = sum((c * st for c, st in zip(coords, strides_of(node.meta["val"]))), sympy.Integer(0))
        return self._load(node, view_root(node, self.is_view), index, mask)

    def _in_registers(self, node: torch.fx.Node, coords: tuple[sympy.Expr, ...]) -> int | None:
        """A value this pointwise kernel computes (a member of its group, built before the
        reader), gathered at the element's own coordinates or 0-dim: the value itself, where
        fusion let a lookup read its index tensor so (fusion._loaded_roots); else None."""
        if node not in self.computed or self.space.rdims or self.placed_at:
            return None
        shape = sizes_of(node)
        if shape and tuple(coords) != flat_coords(ir.XINDEX, shape):
            return None
        self.in_registers.add(node)
        return self.computed[node]

    def _recompute(self, node: torch.fx.Node, coords: tuple[sympy.Expr, ...], mask: int | None) -> int:
        """A pointwise producer's element at `coords`: its rule on its inputs' elements there
        (broadcast), loaded under `mask`, or computed so where inlined too. A slice or a
        permute of one, or a reshape splitting its last dim, is its input's element at the
        mapped coordinates."""
        sliced, dims, split = slice_map(node), permute_dims(node), last_dim_split(node)
        if sliced is not None or dims is not None or split is not None:
            if sliced is not None:
                d, start, step = sliced
                at = coords[:d] + (self.wrapper_size(start) + coords[d] * self.wrapper_size(step),) + coords[d + 1:]
            elif dims is not None:
                at = unpermuted(dims, coords)
            else:
                at = coords[:-2] + (coords[-2] * self.wrapper_size(split) + coords[-1],)
            source = node.args[0]
            return self._recompute(source, at, mask) if source in self.inlined else self.gather(source, at, mask)
        sizes, operands = sizes_of(node), []
        unread, gathers = LOWERINGS.unread(node), LOWERINGS.gathers(node)
        for position, arg in enumerate(node.args):
            if position in unread or position in gathers or not isinstance(arg, torch.fx.Node):
                operands.append(arg)  # a placing op gathers its own (at the coordinates in placed_at)
            elif isinstance(arg.meta.get("val"), (torch.SymInt, torch.SymFloat)):
                operands.append(ir.Ref(self.sym(arg)))
            else:
                at = broadcast_coords(coords, sizes, sizes_of(arg))
                if arg in self.inlined:
                    operands.append(ir.Ref(_leaving_its_dtype(self, self._recompute(arg, at, mask), arg, node)))
                else:
                    operands.append(ir.Ref(self.gather(arg, at, mask)))
        self.recomputed[node] = None
        return self.apply(node, operands, (coords, mask) if LOWERINGS.places(node) else None)

    def apply(self, node: torch.fx.Node, operands: list[Any], placed_at: tuple[tuple[sympy.Expr, ...], int | None] | None = None) -> Any:
        """node's rule on its operands, `reader` being node meanwhile; a placing op computed
        where another op gathers it, at those coordinates and under that mask (placed_at)."""
        reader, self.reader = self.reader, node
        if placed_at is not None:
            self.placed_at.append(placed_at)
        try:
            return LOWERINGS.rule(node)(self, node, *operands)
        finally:
            self.reader = reader
            if placed_at is not None:
                self.placed_at.pop()

    def gather_at(self, node: torch.fx.Node, coords: tuple[sympy.Expr | int, ...], message: str) -> int:
        """An indirect load: `node`'s element at `coords`, where an int coordinate is an
        integer value (a position loaded from an index tensor) that must lie in [0, size of
        that dim), as eager checks; `message` is what the kernel's assert says where one
        does not."""
        sizes = sizes_of(node)
        bounds = tuple((c, sizes[d]) for d, c in enumerate(coords) if isinstance(c, int))
        at = tuple(ir.value_symbol(c) if isinstance(c, int) else c for c in coords)
        index = sum((c * st for c, st in zip(at, strides_of(node.meta["val"]))), sympy.Integer(0))
        return self._load(node, view_root(node, self.is_view), index, None, bounds, message)

    def check(self, bounds: tuple[tuple[int, sympy.Expr], ...], message: str) -> int:
        """Whether integer values lie in [0, size), asserted as gather_at's are (ir.Check)."""
        return self._add(ir.Check(bounds, message))

    def wrapper_size(self, expr: sympy.Expr) -> sympy.Expr:
        """`expr` as a size argument the wrapper computes (ir.lift_sizes does this for what a
        kernel cannot compute; a rule asks for it where index math must not see inside
        `expr`, a Piecewise, say)."""
        if expr.is_number:
            return expr
        if expr not in self.lifted:
            self.lifted[expr] = ir.lifted_symbol(self.name, len(self.lifted))
        return self.lifted[expr]

    def index_value(self, expr: sympy.Expr, dtype: torch.dtype = torch.int64) -> int:
        """An integer value computed from the size symbols and the element's coordinates
        (`dtype` int32 for a bare coordinate: the kernel's index dtype, int32 unless the
        launch indexes past 2**31, and then int64, which is no narrower)."""
        return self.constant(int(expr), dtype) if expr.is_number else self._add(ir.SymValue(expr, dtype))

    def constant(self, value: Any, dtype: torch.dtype) -> int:
        return self._add(ir.Constant(value, dtype))

    def sym(self, node: torch.fx.Node) -> int:
        """A SymInt operand, computed in the kernel from its size arguments; or a SymFloat
        one (1 / numel, say), which the wrapper computes and passes as a float32 argument,
        as eager casts a Python float operand to float32 before the op."""
        val = node.meta["val"]
        if isinstance(val, torch.SymFloat):
            expr = sym_expr(val)
            if expr not in self.lifted:
                self.lifted[expr] = ir.lifted_symbol(self.name, len(self.lifted), integer=False)
            return self._add(ir.SymValue(self.lifted[expr], torch.float32))
        return self._add(ir.SymValue(sym_expr(val), torch.int64))

    def rnumel(self) -> int:
        """The number of reduced elements per row, as an int64 value."""
        return self.index_value(sympy.Mul(*(self.space.sizes[d] for d in self.space.rdims)))

    def dtype(self, value: int) -> torch.dtype:
        return self.values[value].dtype

    def cast(self, value: int, dtype: torch.dtype, node: torch.fx.Node) -> int:
        current = self.values[value]
        if current.dtype == dtype:
            return value
        if isinstance(current, ir.Constant):
            return self.constant(ir.convert_scalar(current.value, dtype), dtype)
        return self._add(ir.Compute("to", (value,), dtype, node.name))

    def round_to(self, value: int, dtype: torch.dtype, node: torch.fx.Node) -> int:
        """`value` as a `dtype` tensor holds it: a float32 value rounded to float16/bfloat16
        (nearest even), an int32 value wrapped to uint8/int8/int16; unless it is already (a
        load of a `dtype` buffer, an earlier rounding to `dtype`). A constant is converted
        here, as eager converts a Python float (through float32). Values of those dtypes are
        otherwise computed in float32 (int32) and rounded once, on store: this is where one
        leaves its dtype inside a kernel (see build_group)."""
        current, op = self.values[value], ir.HELD_AS[dtype]
        compute = ir.compute_dtype(dtype)
        if isinstance(current, ir.Compute) and current.op == op:
            return value
        if isinstance(current, ir.Load) and any(b.name == current.buffer and b.dtype == dtype for b in self.inputs.values()):
            return value
        if isinstance(current, ir.Constant):
            return self.constant(held_value(current.value, dtype), compute)
        return self._add(ir.Compute(op, (self.cast(value, compute, node),), compute, node.name))

    def compute(self, op: str, operands: tuple[int, ...], node: torch.fx.Node, dtype: torch.dtype = torch.float32) -> int:
        if op == "where" and (known := self._known_int(operands[0])) is not None:
            chosen = self.cast(operands[1] if known else operands[2], dtype, node)  # a constant mask's pick
            return self._add(ir.Compute("broadcast", (chosen,), dtype, node.name)) if self.is_scalar(chosen) else chosen
        if op == "where":  # where(c, where(c, a, _), b) is where(c, a, b): a masked gather picked by its mask
            operands = (operands[0], *(self._picked(v, operands[0], k) for k, v in ((1, operands[1]), (2, operands[2]))))
        if op in _BOOL_FOLDS and dtype is torch.bool:
            known = [self._known_int(i) for i in operands]
            if all(k is not None for k in known):
                return self.constant(bool(_BOOL_FOLDS[op](*known)), torch.bool)
            if op in _ABSORBING and len(operands) == 2 and all(self.values[i].dtype is torch.bool for i in operands):
                for k, other in zip(known, reversed(operands)):
                    if k is not None:  # True & b is b, False & b is False (and | the other way)
                        return other if bool(k) != _ABSORBING[op] else self.constant(_ABSORBING[op], torch.bool)
        return self._add(ir.Compute(op, tuple(operands), dtype, node.name))

    def _picked(self, value: int, condition: int, branch: int) -> int:
        """What a `where` on `condition` takes from `value` in its `branch` (1: true, 2:
        false): a `where` on the same condition and dtype there gives its own branch."""
        v = self.values[value]
        if isinstance(v, ir.Compute) and v.op == "where" and v.args[0] == condition and v.dtype == self.dtype(v.args[branch]):
            return v.args[branch]
        return value

    def is_scalar(self, value: int) -> bool:
        """A value computed from constants and size symbols only (not a block of lanes)."""
        v = self.values[value]
        if isinstance(v, ir.SymValue):
            return not v.expr.free_symbols & ir.INDEX_SYMBOLS  # a coordinate differs per lane
        if isinstance(v, ir.Constant):
            return True
        return isinstance(v, ir.Compute) and v.op != "broadcast" and all(self.is_scalar(a) for a in v.args)

    def _known_int(self, value: int) -> int | bool | None:
        """An integer or bool constant's value (a size-1 dim's coordinate is the constant 0), else None."""
        current = self.values[value]
        if isinstance(current, ir.Constant) and isinstance(current.value, (bool, int)):
            return current.value
        return None

    def all_of(self, conditions: list[int], node: torch.fx.Node) -> int | None:
        """The lanes where every bool value holds; None (every lane) for none."""
        return self._fold("logical_and", conditions, node)

    def any_of(self, conditions: list[int], node: torch.fx.Node) -> int | None:
        """The lanes where some bool value holds; None for none."""
        return self._fold("logical_or", conditions, node)

    def _fold(self, op: str, conditions: list[int], node: torch.fx.Node) -> int | None:
        value = None
        for condition in conditions:
            value = condition if value is None else self.compute(op, (value, condition), node, torch.bool)
        return value

    def in_order(self) -> None:
        """Make the kernel's reductions walk each row one element at a time, in rindex order
        (ir.Kernel.ordered): a sum then adds as eager's loop over a window does, bitwise."""
        assert self.space.rdims
        self.ordered = True

    def reduce(self, op: str, value: int, node: torch.fx.Node, dtype: torch.dtype) -> int:
        return self._add(ir.Reduce(op, value, dtype, node.name))

    def scan(self, op: str, value: int, node: torch.fx.Node, dtype: torch.dtype, carry: torch.dtype | None = None) -> int:
        return self._add(ir.Scan(op, value, dtype, node.name, carry))


def _pure_key(value: ir.Value) -> tuple[Any, ...] | None:
    """What makes two values the same: a constant by its type and repr (-0.0 is not 0.0,
    and NaN is NaN), a Compute without its node, a Load by all it is (the same element under
    the same mask: a kernel stores after its loads, so both would read the same). Loads
    repeat where an inlined producer is computed at the same coordinates twice (T5's
    position bucket, a where's two branches); merged, so are the computations on them.
    Reductions and scans are never merged here."""
    if isinstance(value, ir.Load):
        return ("load", value.buffer, value.index, value.dtype, value.mask, value.bounds, value.message)
    if isinstance(value, ir.Constant):
        return ("constant", type(value.value), repr(value.value), value.dtype)
    if isinstance(value, ir.SymValue):
        return ("sym", value.expr, value.dtype)
    if isinstance(value, ir.Compute):
        return ("compute", value.op, value.args, value.dtype)
    return None


def build_group(name: str, members: list[torch.fx.Node], space: Space, is_view: Any = lambda node: False,
                inlined: frozenset[torch.fx.Node] = frozenset(), sized: frozenset[torch.fx.Node] = frozenset()) -> Group:
    """The group's kernel. `sized`: nodes that read only sizes (inlining.size_readers), for
    which nothing is stored."""
    member_set = set(members)
    stored = [n for n in members if isinstance(n.meta["val"], torch.Tensor) and _read_outside(n, member_set | sized, is_view)]
    fake = next((n.meta["val"] for n in members if isinstance(n.meta["val"], torch.Tensor)), None)
    builder = KernelBuilder(space, _tile(space, members, member_set, stored, is_view, inlined), is_view, name, inlined,
                            lambda a, b: provably_equal(a, b, fake))
    value_of: dict[torch.fx.Node, Any] = builder.computed
    for node in members:
        if node.target is operator.getitem:  # one result of a multi-output reduction
            value_of[node] = value_of[node.args[0]][node.args[1]]
            continue
        at = space.sizes if LOWERINGS.reduced_dims(node) is not None else sizes_of(node)
        operands: list[Any] = []
        gathers, unread = LOWERINGS.gathers(node), LOWERINGS.unread(node)
        in_place = [a for a in LOWERINGS.indexes_in_place(node) if a in member_set] if not space.rdims else []
        if any(view_root(a, is_view) in member_set for a in LOWERINGS.gathered(node) if a not in in_place):
            raise ir.IRError(f"{name}: {node.name} loads a value computed in the same kernel (fusion must store it)")
        for position, arg in enumerate(node.args):
            if position in unread:
                operands.append(arg)  # the rule reads nothing of it
            elif position in gathers:
                operands.append(arg)  # the rule loads it at positions it computes
            elif isinstance(arg, torch.fx.Node):
                if arg in member_set or view_root(arg, is_view) in member_set:  # a view of one: broadcasts
                    value = value_of[arg if arg in member_set else view_root(arg, is_view)]
                    operands.append(ir.Ref(_leaving_its_dtype(builder, value, arg, node)))
                elif isinstance(arg.meta.get("val"), (torch.SymInt, torch.SymFloat)):
                    operands.append(ir.Ref(builder.sym(arg)))
                elif arg in inlined:  # a view of a producer, computed here at the element's coordinates in it
                    coords = builder.coords(at) or flat_coords(ir.XINDEX, at)  # (never tiled: _tile)
                    value = builder._recompute(arg, broadcast_coords(coords, at, sizes_of(arg)), None)
                    operands.append(ir.Ref(_leaving_its_dtype(builder, value, arg, node)))
                else:
                    operands.append(ir.Ref(builder.load(arg, at, view_root(arg, is_view))))
            else:
                operands.append(arg)  # rules decide how a non-tensor argument is used
        value_of[node] = builder.apply(node, operands)
    for node in builder.recomputed:
        if any(view_root(a, is_view) in member_set for a in LOWERINGS.read_inputs(node) if a not in builder.in_registers):
            raise ir.IRError(f"{name}: {node.name}, computed where it is gathered, reads a value computed in the same kernel")
    if builder.recomputed:  # what only this kernel's inlined producers read (or take the sizes of) needs no store
        stored = [n for n in stored if _read_outside(n, member_set | sized | _only_here(builder.recomputed, member_set), is_view)]
    outputs, stores = [], []
    for i, node in enumerate(stored):
        val = node.meta["val"]
        shape = sizes_of(node)
        buf = ir.Buffer(f"out_ptr{i}", val.dtype, shape, strides_of(val), node=node.name)
        outputs.append(buf)
        stores.append(ir.Store(buf.name, builder.index(shape, shape, buf.strides), value_of[node]))
    kept = [s for d, s in enumerate(space.sizes) if d not in space.rdims]
    rnumel = sympy.Mul(*(space.sizes[d] for d in space.rdims)) if space.rdims else None
    kernel = ir.Kernel(
        name, sympy.Mul(*kept), tuple(builder.inputs.values()), tuple(outputs), tuple(builder.values), tuple(stores),
        tuple(n.name for n in (*builder.recomputed, *members)), rnumel, builder.tile,
        tuple((s, e) for e, s in builder.lifted.items()), builder.ordered,
    )
    return Group(ir.verify(ir.lift_sizes(kernel)), tuple(members), tuple(stored), tuple(builder.inputs),
                 inlined=tuple(builder.recomputed))


def _leaving_its_dtype(builder: KernelBuilder, value: int, arg: torch.fx.Node, node: torch.fx.Node) -> int:
    """A float16/bfloat16 value computed in the kernel (float32, not yet rounded) as `node`
    reads it: rounded where node's result has another dtype (`.float()`, a comparison, an
    argmax, a float32 softmax), as eager's tensor holds it; unrounded where node computes in
    the same dtype, rounded once at its store (as Inductor does). A uint8/int8/int16 value
    (int32, not yet wrapped) is wrapped for every reader, as eager's arithmetic wraps."""
    dtype, out = arg.meta["val"].dtype, node.meta["val"]
    if dtype in ir.WRAPS:  # wrapped for every reader: the next op's result depends on it
        return builder.round_to(value, dtype, node)
    if dtype not in ir.ROUNDINGS or (isinstance(out, torch.Tensor) and out.dtype == dtype):
        return value
    return builder.round_to(value, dtype, node)


def _read_outside(node: torch.fx.Node, members: set[torch.fx.Node], is_view: Any) -> bool:
    """Whether something outside the group reads `node`, directly or through views (views
    only members read, a squeeze or a transpose there and back, read its value in registers)."""
    return any(user not in members and (not is_view(user) or _read_outside(user, members, is_view)) for user in node.users)


def _only_here(recomputed: dict[torch.fx.Node, None], members: set[torch.fx.Node]) -> set[torch.fx.Node]:
    """The inlined producers this kernel computed that nothing else reads: their readers are
    members, or such producers in turn (another kernel computing one would load its inputs)."""
    here: set[torch.fx.Node] = set()
    for node in reversed(list(recomputed)):  # readers were recomputed after what they read
        if all(user in members or user in here for user in node.users):
            here.add(node)
    return here


def tiled(space: Space, members: list[torch.fx.Node], is_view: Any) -> bool:
    """Whether a pointwise group of `members` storing them all would be tiled (_tile)."""
    stored = [n for n in members if isinstance(n.meta.get("val"), torch.Tensor)]
    return _tile(space, members, set(members), stored, is_view) is not None


def _tile(space: Space, members: list[torch.fx.Node], member_set: set[torch.fx.Node], stored: list[torch.fx.Node],
          is_view: Any, inlined: frozenset[torch.fx.Node] = frozenset()) -> ir.Tile | None:
    """choose_tile over what a pointwise group loads from outside and what it stores; none
    where a value has a shape apart from the space's by dims of 1 (computed at flat xindex),
    or a member computes a view of a producer at its coordinates (inlining.inlined_producers)."""
    if space.rdims or any(sizes_of(n) not in (space.sizes, ()) for n in members) or any(map(LOWERINGS.reads_coordinates, members)):
        return None
    if any(a in inlined and a not in LOWERINGS.gathered(n) and not LOWERINGS.fills(a) for n in members for a in n.all_input_nodes):
        return None
    reads = []
    for node in members:
        unread = {node.args[i] for i in LOWERINGS.unread(node)}
        for arg in node.all_input_nodes:
            val = arg.meta.get("val")
            if arg in unread or arg in inlined and LOWERINGS.fills(arg):
                continue  # not read, or a fill computed from nothing loaded
            if arg not in member_set and view_root(arg, is_view) not in member_set and isinstance(val, torch.Tensor):
                reads.append((sizes_of(arg), strides_of(val)))
    writes = [(sizes_of(n), strides_of(n.meta["val"])) for n in stored]
    return choose_tile(space, reads, writes) if reads and writes else None
