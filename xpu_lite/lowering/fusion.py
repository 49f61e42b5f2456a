"""Kernel-eligible nodes -> fused groups -> ir.Kernel.

Input: the aten graph and its decisions. Output: one Group per run of KERNEL nodes that
share an iteration space, consecutive once the eager calls between them that read none of
them have been moved before the run (the graph is reordered in place). A pointwise run shares its output sizes. A reduction
run shares the reduced input's sizes S and reduced dims D: pointwise producers of size S
are computed inline in the reduction's loads ("full" values, one per element), and
consumers of the reduced rows ("row" values: S with D kept as 1 or squeezed) or of size S
(the row broadcast back over D) join it. A group loads what it reads from outside,
computes its nodes in registers, and stores only the values something outside the group
reads, at the strides eager would give them.
"""
from __future__ import annotations

import dataclasses
import operator
from typing import Any

import sympy
import torch
import torch.fx

from .._torch_compat import FloorDiv, ModularIndexing, provably_positive, sym_expr
from . import ir
from .decisions import Decision, DecisionKind
from .registry import LOWERINGS

aten = torch.ops.aten


@dataclasses.dataclass(frozen=True)
class Group:
    kernel: ir.Kernel
    members: tuple[torch.fx.Node, ...]
    stored: tuple[torch.fx.Node, ...]  # members read outside the group, in kernel.outputs order
    external: tuple[torch.fx.Node, ...]  # tensors loaded, in kernel.inputs order


@dataclasses.dataclass(frozen=True)
class Space:
    """A kernel's iteration space: `sizes` (pointwise: the output; reduction: the reduced
    input) and the reduced dims (empty for a pointwise kernel)."""

    sizes: tuple[sympy.Expr, ...]
    rdims: tuple[int, ...] = ()

    @property
    def row_shapes(self) -> tuple[tuple[sympy.Expr, ...], ...]:
        """Shapes of per-row values: reduced dims kept as 1, or squeezed."""
        keep = tuple(sympy.Integer(1) if d in self.rdims else s for d, s in enumerate(self.sizes))
        return keep, tuple(s for d, s in enumerate(self.sizes) if d not in self.rdims)


@dataclasses.dataclass
class _Run:
    space: Space
    members: list[torch.fx.Node]


def fuse(gm: torch.fx.GraphModule, decisions: dict[str, Decision]) -> list[Group]:
    def is_view(node: Any) -> bool:
        return isinstance(node, torch.fx.Node) and node.name in decisions and decisions[node.name].kind is DecisionKind.VIEW

    runs: list[_Run] = []
    current: _Run | None = None
    waiting: list[torch.fx.Node] = []  # 0-dim values for the next pointwise run to compute inline

    def flush() -> None:  # no pointwise run came: the waiting values get kernels of their own
        nonlocal current
        for node in waiting:
            space = _joined_space(current, node, is_view) if current is not None else None
            if space is None:
                current = _Run(_own_space(node), [])
                runs.append(current)
            current.members.append(node)
        waiting.clear()

    nodes = list(gm.graph.nodes)  # the loop moves nodes: walk a copy
    position: dict[torch.fx.Node, float] = {node: i for i, node in enumerate(nodes)}
    for node in nodes:
        decision = decisions.get(node.name)
        if is_view(node):
            continue  # index math: no kernel of its own, does not end a run
        if decision is not None and decision.kind is DecisionKind.UNPACK and current and node.args[0] in current.members:
            current.members.append(node)  # one output of a fused multi-output reduction (var_mean, max.dim)
            continue
        if decision is None or decision.kind is not DecisionKind.KERNEL:
            if current is not None and current.members and not waiting and _movable_before(node, current.members[0], position):
                current.members[0].prepend(node)  # does not end the run: runs before it
                position[node] = position[current.members[0]] - 0.5
            elif node.op != "placeholder":
                flush()
                current = None
            continue
        if _is_constant(node) and current is not None and not waiting:
            current.members.append(node)  # a 0-dim constant (scalar_tensor, full([])): computed inline
            continue
        space = _joined_space(current, node, is_view) if current is not None else None
        if space is not None and waiting and space.rdims:
            space = None  # the waiting values are for a pointwise run
        if space is None and current is not None and not current.space.rdims and _is_scalar(node, current, is_view):
            space = current.space  # a 0-dim value computed inline by the run, which broadcasts it
        if space is not None:
            current.space = space
            current.members += [*waiting, node]
            waiting.clear()
        elif _is_scalar(node, current, is_view):
            waiting.append(node)  # e.g. a gradient's scale, computed where it is broadcast
        elif waiting and not _own_space(node).rdims:
            current = _Run(_own_space(node), [*waiting, node])
            runs.append(current)
            waiting.clear()
        else:
            flush()
            current = _Run(_own_space(node), [node])
            runs.append(current)
    flush()
    if any(position[node] % 1 for node in nodes):
        gm.recompile()  # nodes moved: gm's own code follows the graph's new order
    runs = [part for run in runs for part in _stored_scalars_apart(run)]
    return [build_group(f"kernel_{i}", run.members, run.space, is_view) for i, run in enumerate(runs)]


def _movable_before(node: torch.fx.Node, first: torch.fx.Node, position: dict[torch.fx.Node, float]) -> bool:
    """Whether a node that is not a kernel's can run before the run that starts at `first`
    instead of ending it: it reads nothing computed since (the run's members, views of
    them) and writes nothing. Eager calls keep their order among themselves (the RNG
    stream, runtime asserts); only kernel nodes move after them, so that the nodes of one
    iteration space become one kernel where an unrelated eager call (a matmul, a size)
    stood between them."""
    if node.op not in ("call_function", "get_attr"):
        return False
    if isinstance(node.target, torch._ops.OpOverload) and node.target._schema.is_mutable:
        return False
    return all(position[arg] < position[first] for arg in node.all_input_nodes)


def _is_scalar(node: torch.fx.Node, run: _Run | None, is_view: Any) -> bool:
    """A pointwise 0-dim value of 0-dim tensors (none a row value of the reduction `run`):
    a pointwise run of more elements computes it inline and broadcasts it (one kernel and
    one rounding, instead of a 0-dim kernel, a stored scalar and a load). When the current
    run cannot, it waits for the next pointwise one."""
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor) or val.dim() != 0 or LOWERINGS.reduced_dims(node) is not None:
        return False
    rows = set(run.members) if run is not None and run.space.rdims else set()  # row values join as rows
    for arg in node.all_input_nodes:
        arg_val = arg.meta.get("val")
        if isinstance(arg_val, torch.Tensor) and (arg_val.dim() != 0 or view_root(arg, is_view) in rows):
            return False
    return True


def _stored_scalars_apart(run: _Run) -> list[_Run]:
    """0-dim values computed inline by a pointwise run of more elements are stored by its
    first lane when something outside the run reads them; where the run may have no
    elements at run time (an unbacked size: its kernel is not launched then), they get a
    0-dim kernel of their own before it, with their 0-dim inputs computed in the run."""
    if run.space.rdims or run.space.sizes == ():
        return [run]
    fake = next(m.meta["val"] for m in run.members if isinstance(m.meta.get("val"), torch.Tensor))
    if provably_positive(sympy.Mul(*run.space.sizes), fake):
        return [run]
    members = set(run.members)
    scalars = {n for n in run.members if isinstance(n.meta.get("val"), torch.Tensor) and n.meta["val"].dim() == 0}
    apart = {n for n in scalars if any(u not in members for u in n.users)}
    if not apart:
        return [run]
    todo = list(apart)
    while todo:  # their 0-dim inputs computed in the run come apart with them
        for arg in todo.pop().all_input_nodes:
            if arg in scalars and arg not in apart:
                apart.add(arg)
                todo.append(arg)
    first = _Run(Space(()), [n for n in run.members if n in apart])
    rest = _Run(run.space, [n for n in run.members if n not in apart])
    return [first, rest]


def _is_constant(node: torch.fx.Node) -> bool:
    val = node.meta.get("val")
    return isinstance(val, torch.Tensor) and val.dim() == 0 and not node.all_input_nodes


def _own_space(node: torch.fx.Node) -> Space:
    rdims = LOWERINGS.reduced_dims(node)
    if rdims is None:
        return Space(_sizes(node))
    return Space(_sizes(node.args[0]), rdims)


# views that keep the row-major order of elements: a row value read through one is itself
_ORDER_PRESERVING = frozenset({aten.view.default, aten.reshape.default, aten._unsafe_view.default, aten.alias.default,
                               aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default, aten.unsqueeze.default})


def _member_shapes(run: _Run, node: torch.fx.Node, is_view: Any) -> set[tuple[sympy.Expr, ...]] | None:
    """Shapes of the members `node` reads, directly or through views of a row value that
    only add or drop its reduced dims or expand it back over them; None if it reads a
    member through another view (a value computed in the kernel cannot be re-read at
    other positions)."""
    members, space = set(run.members), run.space
    rows = space.row_shapes if space.rdims else ()
    shapes = set()
    for arg in node.all_input_nodes:
        if arg in members:
            shapes.add(_sizes(arg))
        elif is_view(arg) and view_root(arg, is_view) in members:
            view = arg
            while is_view(view):
                same_row = view.target in _ORDER_PRESERVING and _sizes(view) in rows
                expanded = view.target is aten.expand.default and rows and _sizes(view.args[0]) == rows[0] and _sizes(view) == space.sizes
                if not (same_row or expanded):
                    return None
                view = view.args[0]
            if _sizes(view) not in rows:
                return None
            shapes.add(rows[0] if _sizes(arg) == space.sizes else _sizes(arg))  # an expanded row broadcasts as (…, 1, …)
    return shapes - {()}  # 0-dim values broadcast anywhere


def _joined_space(run: _Run, node: torch.fx.Node, is_view: Any) -> Space | None:
    """The run's space with `node` added, or None if node needs a kernel of its own."""
    space, members = run.space, set(run.members)
    own = _own_space(node)
    if LOWERINGS.reads_coordinates(node) and space.rdims or own.rdims and any(map(LOWERINGS.reads_coordinates, members)):
        return None  # coordinates (and masked loads) are computed in pointwise kernels only
    if any(view_root(a, is_view) in members for a in LOWERINGS.gathered(node)):
        return None  # it loads its inputs at positions of its own: from memory
    member_shapes = _member_shapes(run, node, is_view)
    if member_shapes is None:
        return None
    if all(_is_constant(m) for m in members):
        return own  # constants load nothing: they fit any space
    if own.rdims:  # a reduction: over the run's elements, or the same reduction as the run's
        if own == space or (not space.rdims and own.sizes == space.sizes):
            return own
        return None
    if not space.rdims:
        return space if own.sizes == space.sizes else None
    keep, squeezed = space.row_shapes
    if own.sizes == space.sizes:  # per element: rows it reads must broadcast back as (…, 1, …)
        ok = member_shapes <= {space.sizes, keep}
    else:  # per row
        ok = own.sizes in (keep, squeezed) and member_shapes <= {keep, squeezed}
    return space if ok else None


def view_root(node: torch.fx.Node, is_view: Any) -> torch.fx.Node:
    while is_view(node):
        node = node.args[0]
    return node


def _sizes(node: torch.fx.Node) -> tuple[sympy.Expr, ...]:
    return tuple(sym_expr(s) for s in node.meta["val"].shape)


def _strides(val: torch.Tensor) -> tuple[sympy.Expr, ...]:
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
        if not unit or unit[0] == live[-1]:
            continue
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


class KernelBuilder:
    def __init__(self, space: Space, tile: ir.Tile | None = None, is_view: Any = lambda node: False, name: str = "kernel") -> None:
        self.space = space
        self.tile = tile
        self.is_view = is_view
        self.name = name
        self.lifted: dict[sympy.Expr, sympy.Symbol] = {}  # sizes the wrapper computes (see wrapper_size)
        self.values: list[ir.Value] = []
        self.inputs: dict[torch.fx.Node, ir.Buffer] = {}
        self.loaded: dict[tuple[torch.fx.Node, tuple[sympy.Expr, ...]], int] = {}

    def coords(self, shape: tuple[sympy.Expr, ...]) -> tuple[sympy.Expr, ...] | None:
        """Coordinates of the current element in a value of `shape`: the space's own (per
        element), or xindex over the row shape (per row). None: the plain flat xindex."""
        if not self.space.rdims:
            return None
        return space_coords(self.space) if shape == self.space.sizes else flat_coords(ir.XINDEX, shape)

    def index(self, at: tuple[sympy.Expr, ...], sizes: tuple[sympy.Expr, ...], strides: tuple[sympy.Expr, ...]) -> sympy.Expr:
        """Offset of the current element of a value of shape `at` in a tensor with
        `sizes`/`strides` broadcast to it."""
        if self.tile is not None and at == self.space.sizes:
            return tiled_index(self.tile, at, sizes, strides)
        return index_expr(at, sizes, strides, self.coords(at))

    def _add(self, value: ir.Value) -> int:
        self.values.append(value)
        return len(self.values) - 1

    def load(self, node: torch.fx.Node, at: tuple[sympy.Expr, ...], root: torch.fx.Node | None = None) -> int:
        """Load `node`'s elements broadcast to shape `at` (the reader's); for a view, read
        its root buffer with the view's strides."""
        if (node, at) not in self.loaded:
            index = self.index(at, _sizes(node), _strides(node.meta["val"]))
            self.loaded[(node, at)] = self._load(node, node if root is None else root, index)
        return self.loaded[(node, at)]

    def _load(self, node: torch.fx.Node, root: torch.fx.Node, index: sympy.Expr, mask: int | None = None) -> int:
        """A Load of `node` from its root's buffer (an input of the kernel from now on),
        `index` being the element's offset in `node`."""
        val, root_val = node.meta["val"], root.meta["val"]
        if root not in self.inputs:
            self.inputs[root] = ir.Buffer(f"in_ptr{len(self.inputs)}", root_val.dtype, _sizes(root), _strides(root_val))
        offset = sym_expr(val.storage_offset()) - sym_expr(root_val.storage_offset()) if root is not node else 0
        return self._add(ir.Load(self.inputs[root].name, index + offset, ir.compute_dtype(val.dtype), mask))

    def element_coords(self, shape: tuple[sympy.Expr, ...]) -> tuple[sympy.Expr, ...]:
        """Coordinates of the current element in an untiled pointwise space of `shape`."""
        assert not self.space.rdims and self.tile is None and shape == self.space.sizes
        return flat_coords(ir.XINDEX, shape)

    def gather(self, node: torch.fx.Node, coords: tuple[sympy.Expr, ...], mask: int) -> int:
        """Load `node`'s element at `coords` (one per dim of node) in the lanes where bool
        value `mask` is true; a view reads its root buffer."""
        index = sum((c * st for c, st in zip(coords, _strides(node.meta["val"]))), sympy.Integer(0))
        return self._load(node, view_root(node, self.is_view), index, mask)

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
        return self._add(ir.SymValue(sym_expr(node.meta["val"]), torch.int64))

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

    def compute(self, op: str, operands: tuple[int, ...], node: torch.fx.Node, dtype: torch.dtype = torch.float32) -> int:
        return self._add(ir.Compute(op, tuple(operands), dtype, node.name))

    def reduce(self, op: str, value: int, node: torch.fx.Node, dtype: torch.dtype) -> int:
        return self._add(ir.Reduce(op, value, dtype, node.name))


def build_group(name: str, members: list[torch.fx.Node], space: Space, is_view: Any = lambda node: False) -> Group:
    member_set = set(members)
    stored = [n for n in members if isinstance(n.meta["val"], torch.Tensor) and any(u not in member_set for u in n.users)]
    builder = KernelBuilder(space, _tile(space, members, member_set, stored, is_view), is_view, name)
    value_of: dict[torch.fx.Node, Any] = {}
    for node in members:
        if node.target is operator.getitem:  # one result of a multi-output reduction
            value_of[node] = value_of[node.args[0]][node.args[1]]
            continue
        at = space.sizes if LOWERINGS.reduced_dims(node) is not None else _sizes(node)
        operands: list[Any] = []
        gathers = LOWERINGS.gathers(node)
        for position, arg in enumerate(node.args):
            if position in gathers:
                operands.append(arg)  # the rule loads it at positions it computes
            elif isinstance(arg, torch.fx.Node):
                if arg in member_set:
                    operands.append(ir.Ref(value_of[arg]))
                elif view_root(arg, is_view) in member_set:  # a row value through a row view or expand: broadcasts
                    operands.append(ir.Ref(value_of[view_root(arg, is_view)]))
                elif isinstance(arg.meta.get("val"), torch.SymInt):
                    operands.append(ir.Ref(builder.sym(arg)))
                else:
                    operands.append(ir.Ref(builder.load(arg, at, view_root(arg, is_view))))
            else:
                operands.append(arg)  # rules decide how a non-tensor argument is used
        value_of[node] = LOWERINGS.rule(node)(builder, node, *operands)
    outputs, stores = [], []
    for i, node in enumerate(stored):
        val = node.meta["val"]
        shape = _sizes(node)
        buf = ir.Buffer(f"out_ptr{i}", val.dtype, shape, _strides(val))
        outputs.append(buf)
        stores.append(ir.Store(buf.name, builder.index(shape, shape, buf.strides), value_of[node]))
    kept = [s for d, s in enumerate(space.sizes) if d not in space.rdims]
    rnumel = sympy.Mul(*(space.sizes[d] for d in space.rdims)) if space.rdims else None
    kernel = ir.Kernel(
        name, sympy.Mul(*kept), tuple(builder.inputs.values()), tuple(outputs), tuple(builder.values), tuple(stores),
        tuple(n.name for n in members), rnumel, builder.tile, tuple((s, e) for e, s in builder.lifted.items()),
    )
    return Group(ir.verify(ir.lift_sizes(kernel)), tuple(members), tuple(stored), tuple(builder.inputs))


def _tile(space: Space, members: list[torch.fx.Node], member_set: set[torch.fx.Node], stored: list[torch.fx.Node],
          is_view: Any) -> ir.Tile | None:
    """choose_tile over what a pointwise group loads from outside and what it stores."""
    if space.rdims or any(_sizes(n) != space.sizes for n in stored) or any(map(LOWERINGS.reads_coordinates, members)):
        return None
    reads = []
    for node in members:
        for arg in node.all_input_nodes:
            val = arg.meta.get("val")
            if arg not in member_set and view_root(arg, is_view) not in member_set and isinstance(val, torch.Tensor):
                reads.append((_sizes(arg), _strides(val)))
    writes = [(_sizes(n), _strides(n.meta["val"])) for n in stored]
    return choose_tile(space, reads, writes) if reads and writes else None
