"""Views as index math: view-type ops on strided tensors are not kernels and not copies.

A kernel that reads a view loads from the view's root buffer with the view's own sizes,
strides and storage offset (which fake tensors give exactly). A view that something
outside the kernels reads (a fallback, the graph output) runs as its eager alias op,
which copies nothing either. Data-dependent views fall back. `diagonal`, `unfold` and
`as_strided` are index math like the others: their traced strides and storage offset say
where each element is, and a kernel only loads through a view, so elements that overlap
(an unfold with step < size, a zero stride) are read twice and never written.

A view's traced value can be stale: a graph pass that replaces a node (AOTAutograd's
tensorify_python_scalars turns `cos * float` into a new `mul` node with a fresh fake
tensor) leaves the views of it holding values traced from the old node, which alias
nothing in the graph. `retrace_stale_views` traces such views again from their input's
current value, so they are views again (llama's rotary `cos.unsqueeze(1)` was an eager
call in every layer).

Ops that return several views (`split_with_sizes`, `split.Tensor`; `unbind` and `chunk`
decompose to them) become one `slice` per output read (`slices_for_splits`; SymInt sizes
too, their starts and ends size computations), which kernels fold into their loads like
any other view (GPT-NeoX splits its fused qkv projection in every layer; a GLU chunks its
projection in two).
"""
from __future__ import annotations

from typing import Any

import operator
from collections.abc import Callable

import sympy
import torch
import torch.fx

from .._torch_compat import fake_mode_of, free_unbacked_symbols, provably_positive, sym_expr

aten = torch.ops.aten

VIEW_OPS: frozenset[Any] = frozenset(
    {
        aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.permute.default,
        aten.transpose.int, aten.t.default, aten.expand.default, aten.unsqueeze.default, aten.squeeze.default,
        aten.squeeze.dim, aten.squeeze.dims, aten.slice.Tensor, aten.select.int, aten.alias.default, aten.detach.default,
        aten.diagonal.default, aten.unfold.default, aten.as_strided.default,
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


def absolute_offset_of_an_input(node: torch.fx.Node) -> str | None:
    """Why an `as_strided` with a storage offset, of a graph input (directly or through
    views), runs as eager's alias, which kernels read (no copy either way); else None. Its
    offset counts from the storage's start, not from the input's own offset, which Dynamo
    does not guard and AOTAutograd does not make a tangent's: index math from the traced
    offset read x[k + 2] where eager reads x[k] for an input x = base[3:] traced as base[1:]."""
    if node.target is not aten.as_strided.default or len(node.args) < 4 and "storage_offset" not in node.kwargs:
        return None
    root = graph_input_under(node.args[0])
    if root is None:
        return None
    return (f"an as_strided of the graph input {root.name} at a storage offset, which counts from the storage's "
            "start: the input's own offset is not guarded, so eager's alias places it")


def graph_input_under(value: Any) -> torch.fx.Node | None:
    """The graph input `value` is, or is a view of (through view ops); else None."""
    while isinstance(value, torch.fx.Node) and value.op == "call_function" and value.target in VIEW_OPS:
        value = value.args[0]
    return value if isinstance(value, torch.fx.Node) and value.op == "placeholder" else None


SPLIT_OPS: frozenset[Any] = frozenset({aten.split_with_sizes.default, aten.split.Tensor})


def slices_for_splits(gm: torch.fx.GraphModule, selected: Callable[[torch.fx.Node], bool]) -> list[str]:
    """Replace each selected split whose outputs are only read through `getitem` by one
    view per output read, `slice(x, dim, start, start + size)`, with the getitem's traced
    value. A size that is a SymInt (`x.chunk(2, -1)` of a dynamic dim: split sizes
    `(n + 1) // 2` and `n - (n + 1) // 2`) gives starts and ends computed by size nodes
    inserted before the split, which the wrapper computes where a slice runs eagerly.
    Returns the splits replaced."""
    replaced = []
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in SPLIT_OPS or not selected(node):
            continue
        users = list(node.users)
        if not all(u.target is operator.getitem and isinstance(u.args[1], int) for u in users):
            continue
        made: list[torch.fx.Node] = []  # the size nodes the spans needed
        with gm.graph.inserting_before(node):
            spans = _split_spans(gm.graph, node, made)
        if spans is None:
            continue
        x, dim = node.args[0], _dim_arg(node)
        for user in users:
            start, end = spans[user.args[1]]
            with gm.graph.inserting_before(user):
                view = gm.graph.call_function(aten.slice.Tensor, (x, dim, start, end))
            view.meta = {**node.meta, "val": user.meta["val"]}
            user.replace_all_uses_with(view)
            gm.graph.erase_node(user)
        gm.graph.erase_node(node)
        for span_node in reversed(made):  # the starts and ends of outputs nothing reads
            if not span_node.users:
                gm.graph.erase_node(span_node)
        replaced.append(node.name)
    if replaced:
        gm.recompile()
    return replaced


def _dim_arg(node: torch.fx.Node) -> Any:
    return node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)


def whole_slice_scatters(gm: torch.fx.GraphModule, selected: Callable[[torch.fx.Node], bool]) -> dict[str, list[str]]:
    """Replace each selected `slice_scatter(base, src, dim, 0, end, 1)` that writes every
    element of base (src of base's sizes, end past the dim) by src, where src has the
    node's sizes, strides and dtype, and is a value of its own: not a graph input nor a
    view (no new alias), nor a graph output where the node is one too. AOTAutograd's
    functionalization writes `out[:, a:b] = v` back through each view level, the outer
    one a slice of every row (`out[:, a:b]` is `out[0:][:, a:b]`): that slice_scatter is
    its source itself (Inductor's post-grad slice_scatter_noop), and a kernel of its own
    was one more pass over the tensor. Returns {src: [the nodes it replaced]} (explain's
    note)."""
    replaced: dict[str, list[str]] = {}
    outputs = set(gm.graph.output_node().all_input_nodes)
    inputs = {storage_id(n.meta.get("val")) for n in gm.graph.find_nodes(op="placeholder")} - {None}
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not aten.slice_scatter.default or not selected(node):
            continue
        src = node.args[1]
        dim, start, end, step = (list(node.args[2:]) + [None] * 4)[:4]
        dim, step = node.kwargs.get("dim", 0 if dim is None else dim), node.kwargs.get("step", 1 if step is None else step)
        start, end = node.kwargs.get("start", start), node.kwargs.get("end", end)
        val, src_val = node.meta.get("val"), src.meta.get("val") if isinstance(src, torch.fx.Node) else None
        if not isinstance(val, torch.Tensor) or not isinstance(src_val, torch.Tensor) or not isinstance(dim, int):
            continue
        if src.op != "call_function" or src.target in VIEW_OPS or (node in outputs and src in outputs) or not _fresh(src, inputs):
            continue
        if (start not in (0, None) or step != 1 or src_val.dtype != val.dtype or src_val.device != val.device
                or not _same_sizes(src_val, val) or not _same_strides(src_val, val)):
            continue
        if end is not None and not (isinstance(end, int) and _past(end, val.shape[dim % val.dim()], val)):
            continue
        read = node.all_input_nodes
        node.replace_all_uses_with(src)
        gm.graph.erase_node(node)
        _erase_dead(gm.graph, read)  # the base it was written into (a `full`), if nothing else reads it
        replaced.setdefault(src.name, []).append(node.name)
    if replaced:
        gm.recompile()
    return replaced


def _fresh(node: torch.fx.Node, inputs: set[int]) -> bool:
    """Whether node's traced value has a storage of its own: not a graph input's (`inputs`)
    nor one of what it reads (an op returning an alias, a `getitem` of a split)."""
    storage = storage_id(node.meta.get("val"))
    if storage is None or storage in inputs:
        return False
    for arg in node.all_input_nodes:
        val = arg.meta.get("val")
        if storage in {storage_id(v) for v in (val if isinstance(val, (list, tuple)) else [val])}:
            return False
    return True


def _erase_dead(graph: torch.fx.Graph, nodes: list[torch.fx.Node]) -> None:
    """Erase those of `nodes` nothing reads any more, and in turn what only they read; not
    graph inputs nor ops that write or draw random numbers (their call is an effect)."""
    todo, erased = list(nodes), set()
    while todo:
        node = todo.pop()
        if node in erased or node.users or node.op != "call_function" or node.is_impure() or _random(node):
            continue
        todo += node.all_input_nodes
        graph.erase_node(node)
        erased.add(node)


def _random(node: torch.fx.Node) -> bool:
    return isinstance(node.target, torch._ops.OpOverload) and torch.Tag.nondeterministic_seeded in node.target.tags


def _past(end: int, size: Any, val: torch.Tensor) -> bool:
    """Whether a slice's int `end` is at or past `size` for every input the graph accepts."""
    return end >= 2**63 - 1 or provably_positive(sympy.Integer(end) - sym_expr(size) + 1, val)


Span = Any  # an int, or a size node (its meta["val"] a SymInt)


def _split_spans(graph: torch.fx.Graph, node: torch.fx.Node, made: list[torch.fx.Node]) -> list[tuple[Span, Span]] | None:
    """(start, end) of each output along the split dim, ints or size nodes (those made here,
    at the graph's insert point, appended to `made`); None for a size that is neither an int
    nor an integer node."""
    sizes = node.args[1]
    outputs = len(node.meta["val"]) if isinstance(node.meta.get("val"), (list, tuple)) else 0
    if not isinstance(_dim_arg(node), int):
        return None
    if node.target is aten.split.Tensor:  # every chunk split_size long, the last one clamped by slice
        if not is_size(sizes) or isinstance(sizes, int) and sizes <= 0:
            return None
        starts = [_size_op(graph, operator.mul, sizes, i, made) for i in range(outputs + 1)]
        return list(zip(starts, starts[1:]))
    if not isinstance(sizes, (list, tuple)) or not all(is_size(n) for n in sizes):
        return None
    starts: list[Span] = [0]
    for n in sizes:
        starts.append(_size_op(graph, operator.add, starts[-1], n, made))
    return list(zip(starts, starts[1:]))


def is_size(value: Any) -> bool:
    """An int, or a graph node whose value is an int or a SymInt."""
    return isinstance(value, int) or isinstance(value, torch.fx.Node) and isinstance(
        value.meta.get("val"), (int, torch.SymInt))


def _size_op(graph: torch.fx.Graph, op: Callable[[Any, Any], Any], a: Span, b: Span, made: list[torch.fx.Node]) -> Span:
    """op(a, b): an int where both are ints (or the other is 0 / 1 for add / mul), else a size
    node with its SymInt value."""
    value = lambda v: v.meta["val"] if isinstance(v, torch.fx.Node) else v  # noqa: E731
    if not isinstance(a, torch.fx.Node) and not isinstance(b, torch.fx.Node):
        return op(a, b)
    unit = 0 if op is operator.add else 1
    if op is operator.mul and 0 in (a, b):
        return 0
    if a == unit and not isinstance(a, torch.fx.Node):
        return b
    if b == unit and not isinstance(b, torch.fx.Node):
        return a
    result = graph.call_function(op, (a, b))
    result.meta["val"] = op(value(a), value(b))
    made.append(result)
    return result


def retrace_stale_views(gm: torch.fx.GraphModule) -> list[str]:
    """Trace again, in graph order, each view op whose traced value does not alias its
    input's, from the input's current value; the new value replaces node.meta["val"] when
    it aliases the input and has the same dtype and sizes (the same expressions). Returns
    the names of the views retraced. A reshape that copies stays as it is."""
    retraced = []
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target not in VIEW_OPS or not isinstance(node.args[0], torch.fx.Node):
            continue
        val, base = node.meta.get("val"), node.args[0].meta.get("val")
        if not isinstance(val, torch.Tensor) or not isinstance(base, torch.Tensor) or _same_storage(val, base):
            continue
        fresh = _trace(node, base)
        if fresh is not None and _same_storage(fresh, base) and fresh.dtype == val.dtype and _same_sizes(fresh, val):
            node.meta["val"] = fresh
            retraced.append(node.name)
    return retraced


def _trace(node: torch.fx.Node, base: torch.Tensor) -> torch.Tensor | None:
    fake_mode = fake_mode_of(base)
    if fake_mode is None:
        return None
    args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: n.meta.get("val"))
    try:
        with fake_mode:
            result = node.target(*args, **kwargs)
    except Exception:  # noqa: BLE001  (a view that does not trace again keeps its old value)
        return None
    return result if isinstance(result, torch.Tensor) else None


def _same_sizes(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dim() == b.dim() and all(sym_expr(x) == sym_expr(y) for x, y in zip(a.shape, b.shape))


def _same_strides(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dim() == b.dim() and all(sym_expr(x) == sym_expr(y) for x, y in zip(a.stride(), b.stride()))


def storage_id(val: Any) -> int | None:
    """Which storage a traced tensor value lives in (None: not a tensor, or no storage)."""
    if not isinstance(val, torch.Tensor):
        return None
    try:
        return val.untyped_storage()._cdata
    except (RuntimeError, NotImplementedError):
        return None


def _same_storage(val: torch.Tensor, base: torch.Tensor) -> bool:
    return (storage := storage_id(val)) is not None and storage == storage_id(base)
