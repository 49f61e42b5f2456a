"""Complex views as views of float pairs, so that kernels read complex values as floats.

Regions compute a complex product on the float32 views of its operands
(decomp/complex_mul.py): `view_as_real(x)`, float math, `view_as_complex(cat(...))`.
Between a `view_as_complex` and the next `view_as_real` the values are complex views
(reshapes, broadcasts, slices, permutes of a complex tensor), which no kernel reads:
each was an eager call, and each product a kernel of its own. `float_pairs` replaces
every selected `view_as_real` of such a chain by the same views of the float pairs, each
with a last dim of 2 (a complex view's dims, then the pair):

    view_as_real(view(view_as_complex(t), s))  ->  view(t, s + [2])

A chain that starts at a complex tensor no `view_as_complex` made (a graph input such as
LLaMA's `freqs_cis`) starts from one `view_as_real` of that tensor (an eager view, no
copy). A conjugate view (`_conj`) ends a chain: its pair is the data's with the imaginary
part negated, which decomp/complex_mul.py reads itself.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from .._torch_compat import fake_mode_of

aten = torch.ops.aten


def _pair_dim(dim: int) -> int:
    """A complex view's dim among its pairs' dims: a negative one counts past the pair."""
    return dim - 1 if dim < 0 else dim


def _sizes(sizes: Any) -> list[Any]:
    return [*sizes, 2]


def _permutation(dims: Any, ndim: int) -> list[int]:
    return [d % ndim for d in dims] + [ndim]


# complex view op -> its float pairs' arguments from (args, the complex input's ndim);
# clone copies, as on the pairs (its memory format: a plain one only)
_PAIRED: dict[Any, Callable[[tuple[Any, ...], int], tuple[Any, ...]]] = {
    aten.view.default: lambda a, n: (_sizes(a[0]),),
    aten._unsafe_view.default: lambda a, n: (_sizes(a[0]),),
    aten.reshape.default: lambda a, n: (_sizes(a[0]),),
    aten.expand.default: lambda a, n: (_sizes(a[0]), *a[1:]),
    aten.unsqueeze.default: lambda a, n: (_pair_dim(a[0]),),
    aten.squeeze.dim: lambda a, n: (_pair_dim(a[0]),),
    aten.select.int: lambda a, n: (_pair_dim(a[0]), a[1]),
    aten.slice.Tensor: lambda a, n: (_pair_dim(a[0]) if a else 0, *a[1:]),
    aten.permute.default: lambda a, n: (_permutation(a[0], n),),
    aten.transpose.int: lambda a, n: (_pair_dim(a[0]), _pair_dim(a[1])),
    aten.alias.default: lambda a, n: (),
    aten.clone.default: lambda a, n: (),
}
_PLAIN_FORMATS = (None, torch.contiguous_format, torch.preserve_format)


def _plain_complex(node: Any) -> bool:
    """A complex64 tensor node without the conjugate bit (view_as_real reads it as is)."""
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return isinstance(val, torch.Tensor) and val.dtype is torch.complex64 and not val.is_conj()


def _link(node: Any, selected: Callable[[torch.fx.Node], bool]) -> bool:
    """A selected complex view of a plain complex tensor whose pairs' view _PAIRED spells."""
    return (isinstance(node, torch.fx.Node) and node.op == "call_function" and node.target in _PAIRED
            and selected(node) and _plain_complex(node) and _plain_complex(node.args[0])
            and set(node.kwargs) <= ({"memory_format"} if node.target is aten.clone.default else set())
            and node.kwargs.get("memory_format") in _PLAIN_FORMATS)


def float_pairs(gm: torch.fx.GraphModule, selected: Callable[[torch.fx.Node], bool]) -> list[str]:
    """Replace each selected `view_as_real` of a chain of complex views by the chain's views
    of the float pairs; returns the `view_as_real` nodes replaced. The complex views and
    `view_as_complex` nodes nothing reads any more are removed."""
    graph, replaced = gm.graph, []
    starts: dict[torch.fx.Node, torch.fx.Node] = {}  # a complex tensor -> the view_as_real made of it
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not aten.view_as_real.default or not selected(node):
            continue
        chain, at = [], node.args[0]
        while _link(at, selected):
            chain.append(at)
            at = at.args[0]
        if isinstance(at, torch.fx.Node) and at.target is aten.view_as_complex.default and selected(at):
            pairs = at.args[0]
        elif chain and _plain_complex(at):
            if at not in starts:  # before this first reader (later ones follow it)
                with graph.inserting_before(node):
                    starts[at] = _made(graph, aten.view_as_real.default, (at,), node)
            pairs = starts[at]
        else:
            continue
        with graph.inserting_before(node):
            for link in reversed(chain):
                args = _PAIRED[link.target](tuple(link.args[1:]), link.args[0].meta["val"].dim())
                pairs = _made(graph, link.target, (pairs, *args), link, link.kwargs)
        if pairs.meta["val"].shape != node.meta["val"].shape:  # (cannot be: the same views of the same pairs)
            raise AssertionError(f"{node.name}: float pairs of shape {pairs.meta['val'].shape}, "
                                 f"not {node.meta['val'].shape}")
        node.replace_all_uses_with(pairs)
        graph.erase_node(node)
        replaced.append(node.name)
        for dead in [*chain, at]:  # outermost first: a view is dead once what read it is
            if not dead.users and dead.op == "call_function":
                graph.erase_node(dead)
    if replaced:
        gm.recompile()
    return replaced


def _made(graph: torch.fx.Graph, target: Any, args: tuple[Any, ...], like: torch.fx.Node,
          kwargs: dict[str, Any] | None = None) -> torch.fx.Node:
    """A new node of `target`, with `like`'s meta (its region, its stack trace) and the value
    traced from its arguments' values."""
    node = graph.call_function(target, args, dict(kwargs or {}))
    values = torch.fx.node.map_arg((args, kwargs or {}), lambda n: n.meta["val"])
    with fake_mode_of(values[0][0]) or contextlib.nullcontext():
        val = target(*values[0], **values[1])
    node.meta = {**like.meta, "val": val}
    return node
