"""Which pointwise producers are computed where they are read, never stored.

Input: the aten graph and its decisions. Output: inlined_producers, the nodes fusion
puts in no run (fusion.py): each kernel that reads one computes its element at the
coordinates it reads (KernelBuilder._recompute), from its inputs loaded there.
"""
from __future__ import annotations

import sympy
import torch
import torch.fx

from .._torch_compat import sym_expr
from .decisions import Decision, DecisionKind
from .registry import LOWERINGS
from .moves import writes
from .scatter import computed_pointwise
from .space import mapped_root, maps_coordinates, sizes_of, view_root

aten = torch.ops.aten


def inlined_producers(gm: torch.fx.GraphModule, decisions: dict[str, Decision]) -> list[torch.fx.Node]:
    """Pointwise kernel nodes that only rules which gather them at positions of their own read
    (LOWERINGS.inlined_args: cat, pad, flip, slice_scatter's source, pools, a lookup's index
    tensor, a scatter's values), or pointwise ops through slices, permutes and last-dim
    splits (_computed_through), or pointwise and placing ops as operands where the node is
    a fill (0-dim too) or a value of inputs they broadcast, or a scatter into a fill
    computed pointwise from inputs (_of_inputs),
    or other such producers, or those views of them: each reader
    computes the producer's element where it reads it, from the producer's inputs loaded
    there, rather than a kernel of its own storing it first (`-x2` in `cat((-x2, x1))`,
    rotary embeddings' rotate_half, and in its gradient the slices of `grad * sin`; OPT's
    `positions + 2` before its embedding; a slice, permute or last-dim split is its input at
    mapped positions, space.slice_map, space.permute_dims, space.last_dim_split). A placing
    op (LOWERINGS.places: rotate_half's cat in llama's keys, read by a product the KV
    cache's cat computes) is one too, computed at the reader's coordinates
    (KernelBuilder.placed_at). The list holds those views too. The reader's kernel may not
    compute those inputs itself (_loaded_roots), and nothing between the producer and the
    reader writes a tensor: the inputs are read when the reader runs."""
    def kernel(node: torch.fx.Node) -> bool:
        return node.name in decisions and decisions[node.name].kind is DecisionKind.KERNEL

    def producer(node: torch.fx.Node) -> bool:  # a pointwise node, or a slice of one read at mapped positions
        val = node.meta.get("val")
        if not (isinstance(val, torch.Tensor) and (val.dim() > 0 or LOWERINGS.fills(node)) and node.users):
            return False  # a 0-dim value is computed where a run broadcasts it (fusion), a 0-dim fill anywhere
        if node.name in decisions and decisions[node.name].kind is DecisionKind.VIEW:
            return maps_coordinates(node)
        return kernel(node) and (LOWERINGS.pointwise(node) or LOWERINGS.places(node))

    nodes = list(gm.graph.nodes)
    position = {node: i for i, node in enumerate(nodes)}
    sized = size_readers(gm)
    written = [i for i, node in enumerate(nodes) if writes(node)]
    read_at: dict[torch.fx.Node, int] = {}  # an inlined producer -> where its last reader runs
    for node in reversed(nodes):  # readers first
        if not producer(node):
            continue
        readers = []
        for user in node.users:
            if user in sized:
                continue  # reads sizes only, computed from the inputs' symbols
            if user in read_at:
                readers.append(read_at[user])  # computed where that one is
            elif kernel(user) and (_only_gathered(user, node) or _computed_through(user, node, decisions)
                                   or _of_inputs(user, node, decisions)):
                readers.append(position[user])
            else:
                break
        else:
            last = max(readers, default=-1)
            if readers and not any(position[node] < i < last for i in written):
                read_at[node] = last
    return sorted(read_at, key=position.__getitem__)


def _only_gathered(user: torch.fx.Node, node: torch.fx.Node) -> bool:
    """Whether `user` reads `node` only as a tensor its rule gathers and computes where it
    does, when it is a pointwise producer (LOWERINGS.inlined_args)."""
    gathers = LOWERINGS.inlined_args(user)
    inside = lambda arg: arg is node or isinstance(arg, (list, tuple)) and node in arg  # noqa: E731
    return (any(inside(a) for p, a in enumerate(user.args) if p in gathers)
            and not any(inside(a) for p, a in enumerate(user.args) if p not in gathers)
            and not any(inside(v) for v in user.kwargs.values()))


def _computed_through(user: torch.fx.Node, view: torch.fx.Node, decisions: dict[str, Decision]) -> bool:
    """Whether the pointwise `user` reads `view`, slices, permutes and last-dim splits of a
    pointwise producer (space.mapped_root), only as an operand it computes on (not a
    gathered, unread or keyword argument): user's kernel computes the producer's element
    at the coordinates the views map the element to (KernelBuilder._recompute).
    `y.transpose(1, 2).contiguous()` of a pointwise y (attention's head merge after rotary
    embeddings' gradient) is one kernel: y is never stored."""
    source = mapped_root(view, lambda n: n.name in decisions and decisions[n.name].kind is DecisionKind.VIEW)
    decision = decisions.get(source.name) if source is not None else None
    if not (LOWERINGS.pointwise(user) and decision is not None and decision.kind is DecisionKind.KERNEL
            and (LOWERINGS.pointwise(source) or LOWERINGS.places(source))):
        return False  # a view of an input or an eager call's result is loaded as it is
    return _read_as_operand(user, view)


def _read_as_operand(user: torch.fx.Node, node: torch.fx.Node) -> bool:
    """Whether `user` reads `node` only as an operand its rule computes on, at the element's
    own coordinates (broadcast): not as a tensor it gathers, an unread or a keyword argument."""
    skipped = set(LOWERINGS.unread(user)) | set(LOWERINGS.gathers(user))
    return (any(arg is node for p, arg in enumerate(user.args) if p not in skipped)
            and not any(arg is node or isinstance(arg, (list, tuple)) and node in arg for p, arg in enumerate(user.args) if p in skipped)
            and node not in user.kwargs.values())


def _of_inputs(user: torch.fx.Node, node: torch.fx.Node, decisions: dict[str, Decision]) -> bool:
    """Whether the pointwise or placing `user` reads `node`, pointwise on only what no kernel
    computes (graph inputs, eager results), as an operand: user's kernel computes node's
    element where it reads it, from those inputs loaded there, and no kernel stores it.
    A fill (LOWERINGS.fills: `full`, `scalar_tensor`) reads nothing, so wherever it is read:
    slice_backward's zeros, the base of a slice_scatter that an inlined slice_scatter of the
    same zeros reads (every causal LM's `hidden[:, -k:]` in training), were stored by a
    kernel of their own and loaded back. Another such value only where user reads it
    broadcast to more elements (a dim node lacks or has as 1 where user's is not 1), which
    no run of node's shape would give user: Gemma's RMSNorm scales by `1 + weight`, an add
    of 64 values that was a kernel of its own and the product a third kernel after the
    norm's; the product now joins the norm's kernel. What a kernel computes stays a member
    of a run: the row values of a reduction are computed where its rows are. A scatter
    into a fill computed pointwise (scatter.computed_pointwise) from such inputs is read
    wherever it is read, as a fill is: a load of its row's position and a compare
    (cross_entropy's gradient, computed in log_softmax's gradient kernel: no logits-sized
    one-hot stored between them where a row value came in between)."""
    one_hot = computed_pointwise(node)
    if not ((LOWERINGS.pointwise(node) or one_hot) and (LOWERINGS.pointwise(user) or LOWERINGS.places(user))
            and _read_as_operand(user, node)):
        return False
    if LOWERINGS.fills(node):
        return True
    view = lambda n: n.name in decisions and decisions[n.name].kind is DecisionKind.VIEW  # noqa: E731
    if any(n.name in decisions and decisions[n.name].kind is DecisionKind.KERNEL
           for n in (view_root(a, view) for a in node.all_input_nodes if not (one_hot and a is node.args[0]))):
        return False
    if one_hot:
        return True
    ours, theirs = sizes_of(node), sizes_of(user)
    lead = len(theirs) - len(ours)
    return lead >= 0 and (any(n != 1 for n in theirs[:lead]) or any(m == 1 and n != 1 for m, n in zip(ours, theirs[lead:])))


SIZE_READS = frozenset({aten.sym_size.int, aten.sym_stride.int, aten.sym_numel.default, aten.sym_storage_offset.default})


def size_readers(gm: torch.fx.GraphModule) -> frozenset[torch.fx.Node]:
    """The nodes that read only a tensor's sizes, in symbols the graph's inputs expose (the
    `sym_numel` of an intermediate AOTAutograd saves for the backward): the wrapper
    computes them from those symbols, so they read no value of a kernel, which need not be
    stored for them, and do not end a kernel."""
    exposed: set[sympy.Symbol] = set()
    for node in gm.graph.find_nodes(op="placeholder"):
        val = node.meta.get("val")
        for size in val.shape if isinstance(val, torch.Tensor) else [val]:
            if isinstance(expr := sym_expr(size), sympy.Symbol):
                exposed.add(expr)
    return frozenset(node for node in gm.graph.nodes if node.op == "call_function" and node.target in SIZE_READS
                     and (expr := sym_expr(node.meta.get("val"))) is not None and expr.free_symbols <= exposed)
