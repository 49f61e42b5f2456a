"""Kernel-eligible nodes -> fused groups -> ir.Kernel.

Input: the aten graph and its decisions. Output: one Group per run of KERNEL nodes that
share an iteration space, consecutive once the eager calls between them that read none of
them have been moved before the run, with the views they read (the graph is reordered in
place). A pointwise run shares its output sizes. A reduction run shares the reduced
input's sizes S and reduced dims D: pointwise producers of size S, and placing ops
(_takes_as_prologue), are computed inline in the reduction's loads ("full" values, one per
element), and consumers of the reduced rows ("row" values: S with D kept
as 1 or squeezed) or of size S (the row broadcast back over D) join it. A group loads what
it reads from outside, computes its nodes in registers, and stores only the values
something outside the group reads, at the strides eager would give them
(kernel_builder.py builds each group's kernel). A scatter node (index_put, scatter) is a
group of its own that stores into its input's buffer (scatter.py). An adaptive pool is a
reduction over a space of its own: its result's elements times a bound on their windows
(adaptive.py); consumers of its rows join it. A pointwise producer or placing op that
only placing ops, pools and scatters read, or pointwise ops through slices, permutes and
reshapes that split the last dim, and a fill or a broadcast value of inputs that
pointwise ops read (inlined_producers), is in no run: each reader's kernel computes it
where it reads it, and it is never stored.
"""
from __future__ import annotations

import dataclasses
import operator
from typing import Any

import sympy
import torch
import torch.fx

from .._torch_compat import provably_equal, provably_positive
from .decisions import Decision, DecisionKind
from .inlining import inlined_producers, size_readers
from .kernel_builder import Group, build_group, tiled
from .moves import check_order, movable_before, moving_with, nodes_between, writes
from .registry import LOWERINGS
from .scatter import build_scatter, own_buffers
from .space import (ORDER_PRESERVING, Space, reshaped_element, reshapes, same_elements, same_elements_shape, same_shape, sizes_of,
                    view_root, views_of)

aten = torch.ops.aten


@dataclasses.dataclass
class _Run:
    space: Space
    members: list[torch.fx.Node]
    scatter: bool = False  # one scatter node: its own kernel, storing into its input's buffer
    # a lookup reads an index the run computes, in registers (_loaded_roots): the run stays
    # pointwise (a reduction computes its elements at coordinates of its own)
    registers: bool = False
    # the run this one directly follows: it began where a node did not fit that run's space
    # (not after an eager call); a reduction may take both (_reduction_ahead)
    follows: _Run | None = dataclasses.field(default=None, repr=False, compare=False)


def fuse(gm: torch.fx.GraphModule, decisions: dict[str, Decision]) -> list[Group]:
    def is_view(node: Any) -> bool:
        return isinstance(node, torch.fx.Node) and node.name in decisions and decisions[node.name].kind is DecisionKind.VIEW

    runs: list[_Run] = []
    current: _Run | None = None
    waiting: list[torch.fx.Node] = []  # 0-dim values for the next pointwise run to compute inline

    def flush() -> None:  # no pointwise run came: the waiting values get kernels of their own
        nonlocal current
        for node in waiting:
            space = _joined_space(current, node, is_view, inlined) if current is not None else None
            if space is None:
                current = _Run(_own_space(node), [])
                runs.append(current)
            current.members.append(node)
        waiting.clear()

    moved = own_buffers(gm, decisions)  # scatters write a buffer of their own (clones inserted)
    inlined = frozenset(inlined_producers(gm, decisions))
    sized = size_readers(gm)
    nodes = list(gm.graph.nodes)  # the loop moves nodes: walk a copy
    position: dict[torch.fx.Node, float] = {node: i for i, node in enumerate(nodes)}
    for node in nodes:
        decision = decisions.get(node.name)
        if is_view(node) or node in inlined or node in sized:
            continue  # index math, computed where it is gathered, or sizes: no kernel of its own, does not end a run
        if decision is not None and decision.kind is DecisionKind.UNPACK and current and node.args[0] in current.members:
            current.members.append(node)  # one output of a fused multi-output reduction (var_mean, max.dim)
            continue
        if decision is None or decision.kind is not DecisionKind.KERNEL:
            moving = movable_before(node, current.members[0], position, is_view) if current and current.members and not waiting else None
            if moving:
                for step in moving:  # does not end the run: runs before it (with the views it reads)
                    current.members[0].prepend(step)
                    position[step] = position[current.members[0]] - 0.5
                moved = True
            elif node.op != "placeholder":
                flush()
                current = None
            continue
        if (scattered := LOWERINGS.scatter_space(node)) is not None:
            flush()  # ends the run: what reads its result reads it from memory, after its stores
            current = None
            runs.append(_Run(Space(scattered), [node], scatter=True))
            continue
        if _is_constant(node) and current is not None and not waiting:
            current.members.append(node)  # a 0-dim constant (scalar_tensor, full([])): computed inline
            continue
        if waiting and any(root in waiting for root in _loaded_roots(node, inlined, is_view)):
            flush()  # it loads a waiting value at positions of its own: from memory, so stored first
        space = _joined_space(current, node, is_view, inlined) if current is not None else None
        if space is not None and waiting and space.rdims:
            space = None  # the waiting values are for a pointwise run
        if space is None and current is not None and not current.space.rdims and _is_scalar(node, current, is_view):
            space = current.space  # a 0-dim value computed inline by the run, which broadcasts it
        if space is not None:
            current.registers = current.registers or any(root in current.members for root in _loaded_roots(node, inlined, is_view))
            current.space = space
            current.members += [*waiting, node]
            waiting.clear()
        elif _is_scalar(node, current, is_view):
            waiting.append(node)  # e.g. a gradient's scale, computed where it is broadcast
        elif waiting and not _own_space(node).rdims:
            current = _Run(_own_space(node), [*waiting, node])
            runs.append(current)
            waiting.clear()
        elif current is not None and not waiting and (ahead := _reduction_ahead(current, node, position, is_view, inlined)):
            moving, merged = ahead
            for step in moving:  # the reduction runs before the run's values, which become its rows' (an EMA's `buf * 0.9`)
                current.members[0].prepend(step)
                position[step] = position[current.members[0]] - 0.5
            if merged is not current:  # the run before took it as its prologue's rows: one kernel for both
                runs = [run for run in runs if run is not current]
            current = merged
            moved = True
        else:
            flush()
            current = _Run(_own_space(node), [node], follows=current if not waiting else None)
            runs.append(current)
    flush()
    sunk = _taken_by_readers(runs, is_view, inlined, sized,
                             lambda n: is_view(n) or n in inlined or n.name in decisions and decisions[n.name].kind is DecisionKind.SIZE)
    moved = moved or sunk
    parts = [part for run in runs for part in ([run] if run.scatter else _stored_scalars_apart(run))]
    if moved or len(parts) > len(runs):
        check_order(gm)
        gm.recompile()  # nodes moved: gm's own code follows the graph's new order
    runs = parts
    return [titled(build_scatter(f"kernel_{i}", run.members[0], is_view, inlined) if run.scatter else
                   build_group(f"kernel_{i}", run.members, run.space, is_view, inlined, sized)) for i, run in enumerate(runs)]


TITLE_OPS = 5  # at most this many op names in a kernel's function name


def titled(group: Group) -> Group:
    """The group, its kernel titled by the ops its nodes came from (before decomposition), in
    the order they first compute, as a GPU profile shows them (Inductor names its kernels
    alike): `kernel_0_native_layer_norm_gelu`. Deterministic: the same ops, the same name,
    so identical kernels of two graphs share one compiled source."""
    ops: dict[str, None] = {}
    for node in (*group.inlined, *group.members):
        op = node.meta.get("original_aten") or node.target
        if isinstance(op, torch._ops.OpOverload):
            ops.setdefault(op._overloadpacket.__name__.strip("_"), None)
    title = "_".join(list(ops)[:TITLE_OPS])
    return dataclasses.replace(group, kernel=dataclasses.replace(group.kernel, title=title))


def _loaded_roots(node: torch.fx.Node, inlined: frozenset[torch.fx.Node], is_view: Any,
                  computed: frozenset[torch.fx.Node] | set[torch.fx.Node] = frozenset()) -> list[torch.fx.Node]:
    """The buffers `node`'s rule loads at positions of its own: its gathered tensors', and
    for an inlined producer among them, its inputs' (a kernel must store them first).
    `computed`: the values of the pointwise run `node` would join. A lookup's index tensor
    of its own shape is read at the element's own coordinates (LOWERINGS.indexes_in_place),
    and so are the inputs of that shape of an inlined producer of one: where the run
    computes them (or a 0-dim value), they are read in registers, not loaded (grid_sample's
    coordinates, computed and looked up in one kernel)."""
    in_place = set(LOWERINGS.indexes_in_place(node)) if computed else set()
    gathered = LOWERINGS.gathered(node)
    roots, todo = [], [(arg, arg in in_place) for arg in gathered]
    todo += [(arg, False) for arg in node.all_input_nodes if arg in inlined and arg not in gathered]  # _computed_through
    while todo:
        arg, aligned = todo.pop()
        if aligned and arg in computed:
            continue
        if arg in inlined:  # a pointwise one reads its inputs of its shape at its coordinates
            aligned = aligned and LOWERINGS.pointwise(arg)
            todo += [(a, aligned and _tensor_shape(a) in (sizes_of(arg), ())) for a in LOWERINGS.read_inputs(arg)]
        else:
            roots.append(view_root(arg, is_view))
    return roots


def _tensor_shape(node: torch.fx.Node) -> tuple[sympy.Expr, ...] | None:
    return sizes_of(node) if isinstance(node.meta.get("val"), torch.Tensor) else None


def _reduction_ahead(run: _Run, node: torch.fx.Node, position: dict[torch.fx.Node, float], is_view: Any,
                     inlined: frozenset[torch.fx.Node]) -> tuple[list[torch.fx.Node], _Run] | None:
    """A reduction `node` that cannot join the pointwise `run` before it, but reads nothing
    it computes, moved ahead of it, where the run's values join it as row values: (the nodes
    to move before the run's first member, the run they make). Where `run` directly follows
    a run the reduction can take as its prologue (`y = x * 2` before `y.mean(0)`), that run
    is extended with the reduction and `run`'s values; otherwise the reduction starts a new
    one. None where `run`'s values are not all of the reduction's rows' sizes.
    `buf.mul_(0.9).add_(y.mean(0), alpha=0.1)` is then one kernel with y's, which stores
    into `buf` in place, where `buf * 0.9` was a kernel of its own and the sum a copy_."""
    if not _own_space(node).rdims or run.space.rdims or run.space.reshaped or run.scatter or run.registers:
        return None
    moving = movable_before(node, run.members[0], position, is_view)
    if moving is None:
        return None
    before = run.follows
    if (before is not None and not before.scatter and _adjacent(before, run, is_view, inlined)
            and (space := _joined_space(before, node, is_view, inlined)) is not None):
        merged = _joined_rows(_Run(space, [*before.members, node], registers=before.registers, follows=before.follows),
                              run, is_view, inlined)
        if merged is not None:
            before.space, before.members = merged.space, merged.members
            return moving, before
    joined = _joined_rows(_Run(_own_space(node), [node], follows=run.follows), run, is_view, inlined)
    if joined is None:
        return None
    run.space, run.members = joined.space, joined.members  # the run, the reduction first
    return moving, run


def _taken_by_readers(runs: list[_Run], is_view: Any, inlined: frozenset[torch.fx.Node], sized: frozenset[torch.fx.Node],
                      follows: Any) -> bool:
    """Each pointwise run whose values one later run alone reads (directly or through
    views), with no write or scatter between them, joins that run where it starts: a
    gradient's partial sum `a + b`, read by `+ c` after the matmul that computes c, is
    computed in c's kernel and never stored (one of llama's per layer). The run's nodes
    move to just before the reader's first member, and with them what reads them in
    between where `follows` (views, sizes, inlined producers, which run where their
    readers do: moves.moving_with); what they read comes before them already. A copy
    into a slice of the run's value, which a kernel computes from its source alone, does
    not read it (`x.clone()` then `out[:, 1:3] = v`: the clone joins the write-back's
    kernel). `runs` is updated in place. Whether any moved."""
    moved, i = False, 0
    run_of = {m: r for r in runs for m in r.members}
    while i < len(runs):
        run = runs[i]
        readers = [run_of.get(user) for user in _readers_outside(run, is_view, lambda n: n in run_of or n in inlined) - sized]
        reader = readers[0] if readers and all(r is readers[0] for r in readers) else None
        span = nodes_between(run.members[0], reader.members[0]) if reader is not None and any(r is reader for r in runs[i + 1:]) else []
        moving = moving_with(run.members, span, follows) if span and not (run.scatter or run.space.rdims or reader.scatter) else None
        merged = (_joined_rows(_Run(run.space, list(run.members), registers=run.registers), reader, is_view, inlined)
                  if moving and not any(writes(n) or n in run_of and run_of[n].scatter for n in span if n not in moving) else None)
        if merged is None:
            i += 1
            continue
        for node in [n for n in span if n in moving]:  # in their order
            reader.members[0].prepend(node)
        reader.space, reader.members, reader.registers = merged.space, merged.members, merged.registers
        run_of.update(dict.fromkeys(run.members, reader))
        del runs[i]
        moved = True
    return moved


def _readers_outside(run: _Run, is_view: Any, computed: Any = lambda node: False) -> set[torch.fx.Node]:
    """The nodes outside `run` that read its members, through views too (the views themselves
    not), but those a kernel computes (`computed`) taking its sizes alone (LOWERINGS.read_inputs:
    copy's destination)."""
    members = set(run.members)
    return {user for node in (*run.members, *views_of(run.members, is_view)) for user in node.users
            if not is_view(user) and user not in members and not (computed(user) and node not in LOWERINGS.read_inputs(user))}


def _adjacent(before: _Run, run: _Run, is_view: Any, inlined: frozenset[torch.fx.Node]) -> bool:
    """Whether only views and inlined producers stand between `before`'s last member and
    `run`'s first: no eager call moved there, which one kernel for both, called where
    `before` starts, would run ahead of."""
    node = before.members[-1].next
    while node is not run.members[0]:
        if not (is_view(node) or node in inlined):
            return False
        node = node.next
    return True


def _joined_rows(joined: _Run, run: _Run, is_view: Any, inlined: frozenset[torch.fx.Node]) -> _Run | None:
    """`joined` with every member of `run` added, as fuse adds them, or None."""
    for member in run.members:
        if member.target is operator.getitem and member.args[0] in joined.members or _is_constant(member):
            space = joined.space  # one result of a multi-output reduction; a 0-dim constant
        elif ((space := _joined_space(joined, member, is_view, inlined)) is None and not joined.space.rdims
              and _is_scalar(member, joined, is_view)):
            space = joined.space
        if space is None:
            return None
        joined.registers = joined.registers or any(root in joined.members for root in _loaded_roots(member, inlined, is_view))
        joined.space = space
        joined.members.append(member)
    return joined


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
    position = {node: i for i, node in enumerate(rest.members[0].graph.nodes)}
    for node in first.members:  # a kernel is called at its first member: this one before the rest's
        if position[node] > position[rest.members[0]]:  # (what they read comes before the run's first member;
            rest.members[0].prepend(node)  # those before it stay, after the views of them there)
    return [first, rest]


def _is_constant(node: torch.fx.Node) -> bool:
    val = node.meta.get("val")
    return isinstance(val, torch.Tensor) and val.dim() == 0 and not node.all_input_nodes


def _own_space(node: torch.fx.Node) -> Space:
    if (own := LOWERINGS.own_space(node)) is not None:
        return Space(*own)
    rdims = LOWERINGS.reduced_dims(node)
    if rdims is None:
        return Space(sizes_of(node))
    return Space(sizes_of(node.args[0]), rdims)


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
            shapes.add(sizes_of(arg))
        elif is_view(arg) and view_root(arg, is_view) in members and (
                same_elements(arg, view_root(arg, is_view), not space.rdims) or reshaped_element(arg, space, is_view)):
            # transpose(1, 2).transpose(1, 2), a view there and back: the member itself; in a
            # pointwise run also one that only adds or drops dims of size 1 (a gather's
            # squeeze), or reshapes it, read at the same flat position (_reshaped_space); so in
            # a reduction over a reshaped run's elements, a reshape of one of them
            shapes.add(sizes_of(arg))
        elif is_view(arg) and view_root(arg, is_view) in members:
            view = arg
            while is_view(view):
                same_row = view.target in ORDER_PRESERVING and sizes_of(view) in rows
                expanded = view.target is aten.expand.default and rows and sizes_of(view.args[0]) == rows[0] and sizes_of(view) == space.sizes
                if not (same_row or expanded):
                    return None
                view = view.args[0]
            if sizes_of(view) not in rows:
                return None
            shapes.add(rows[0] if sizes_of(arg) == space.sizes else sizes_of(arg))  # an expanded row broadcasts as (…, 1, …)
    return shapes - {()}  # 0-dim values broadcast anywhere


def _reshaped_space(run: _Run, node: torch.fx.Node, sizes: tuple[sympy.Expr, ...], is_view: Any, equal: Any) -> Space | None:
    """The pointwise run's space with `node` of another shape added, where node reads a
    member, itself or through reshapes (ORDER_PRESERVING views), and has as many elements
    (`sizes`: its space's, a reduction's input): at each flat position the run computes the
    same element of both (`o.transpose(1, 2).reshape(b, t, c) + r`: the copy and the add in
    one kernel, the copy never stored; a layer_norm after it takes both as its input's
    elements, KernelBuilder.coords). Not where the run or node alone would be tiled (a
    transposed read made contiguous): a kernel of mixed shapes is computed at the flat
    position, and would read it a lane apart."""
    space = run.space
    if not equal(sympy.Mul(*sizes), sympy.Mul(*space.sizes)):
        return None
    members = set(run.members)
    if not any(view_root(arg, is_view) in members and reshapes(arg, is_view) for arg in node.all_input_nodes):
        return None
    if tiled(space, run.members, is_view) or tiled(_own_space(node), [node], is_view):
        return None
    return dataclasses.replace(space, reshaped=True)


def _takes_as_prologue(reduction: torch.fx.Node, member: torch.fx.Node) -> bool:
    """Whether a reduction or scan can compute `member`, which reads element coordinates,
    per element of its input (cat, pad or flip before a sum or cumsum: cumsum's gradient
    is a flip, a cumsum and a flip; an embedding before its norm): at the space's own
    coordinates, with masked or indirect loads (KernelBuilder.gather, gather_at; the bounds
    assert in the reduction's pass). Not into a reduction over a space of its own (an
    adaptive pool's windows)."""
    return LOWERINGS.own_space(reduction) is None


def _joined_space(run: _Run, node: torch.fx.Node, is_view: Any, inlined: frozenset[torch.fx.Node]) -> Space | None:
    """The run's space with `node` added, or None if node needs a kernel of its own."""
    space, members = run.space, set(run.members)
    own = _own_space(node)
    if LOWERINGS.reads_coordinates(node) and space.rdims:
        return None  # after a reduction, nothing reads coordinates: its rows are computed per row
    if own.rdims and (run.registers or not all(_takes_as_prologue(node, m) for m in members if LOWERINGS.reads_coordinates(m))):
        return None
    if any(root in members for root in _loaded_roots(node, inlined, is_view, set() if space.rdims else members)):
        return None  # it loads its inputs at positions of its own: from memory
    member_shapes = _member_shapes(run, node, is_view)
    if member_shapes is None:
        return None
    if all(_is_constant(m) for m in members):
        return own  # constants load nothing: they fit any space
    # sizes equal under the guards count as equal (a GLU's halves, (n + 1) // 2 and n - (n + 1) // 2)
    equal = lambda a, b: provably_equal(a, b, node.meta["val"])  # noqa: E731
    same = lambda a, b: same_shape(a, b, equal)  # noqa: E731
    if own.rdims:  # a reduction: over the run's elements (in a shape apart by dims of 1, or reshaped, too), or the same reduction
        if not space.rdims and same_elements_shape(own.sizes, space.sizes, equal):
            return dataclasses.replace(own, reshaped=space.reshaped)
        if not space.rdims and _reshaped_space(run, node, own.sizes, is_view, equal) is not None:
            return dataclasses.replace(own, reshaped=True)
        return space if own.rdims == space.rdims and same(own.sizes, space.sizes) else None
    if not space.rdims:  # the same elements in the same flat order
        if same_elements_shape(own.sizes, space.sizes, equal):
            return space
        return _reshaped_space(run, node, own.sizes, is_view, equal)
    keep, squeezed = space.row_shapes
    if same(own.sizes, space.sizes):  # per element: rows it reads must broadcast back as (…, 1, …)
        ok = all(shape == keep or same(shape, space.sizes) for shape in member_shapes)
    else:  # per row
        ok = own.sizes in (keep, squeezed) and member_shapes <= {keep, squeezed}
    return space if ok else None


