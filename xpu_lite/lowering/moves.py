"""Moving nodes in the graph, which fusion does so that the nodes of one kernel are
together: which nodes may move (movable_before, moving_with), the nodes between two
(nodes_between), which of them write (writes), and the check that every node still
comes after what it reads (check_order)."""
from __future__ import annotations

import warnings
from typing import Any

import torch
import torch.fx


def movable_before(node: torch.fx.Node, first: torch.fx.Node, position: dict[torch.fx.Node, float],
                   is_view: Any) -> list[torch.fx.Node] | None:
    """The nodes to move before the run that starts at `first` so that `node`, which is not
    a kernel's, runs there instead of ending the run: node, after the views it reads that
    come since `first` (a matmul's `view` of its input); None where it cannot. It reads
    nothing computed since (the run's members, views of them) and writes nothing. Eager
    calls keep their order among themselves (the RNG stream, runtime asserts); only kernel
    nodes move after them, so that the nodes of one iteration space become one kernel
    where an unrelated eager call (a matmul, a size) stood between them: SwiGLU's
    `silu(gate) * up` is one kernel, with `up`'s matmul run before it."""
    if node.op not in ("call_function", "get_attr") or writes(node):
        return None
    views: list[torch.fx.Node] = []
    for arg in node.all_input_nodes:
        if position[arg] < position[first]:
            continue
        if not is_view(arg) or (before := movable_before(arg, first, position, is_view)) is None:
            return None
        views += [v for v in before if v not in views]
    return [*views, node]


def moving_with(members: list[torch.fx.Node], span: list[torch.fx.Node], follows: Any) -> set[torch.fx.Node] | None:
    """`members` and what reads them in `span`, in turn too, where all of it `follows`
    (views of them, sizes of those: the graph stays in order when they move); else None."""
    within, moving, todo = set(span), set(members), list(members)
    while todo:
        for user in todo.pop().users:
            if user in within and user not in moving:
                if not follows(user):
                    return None
                moving.add(user)
                todo.append(user)
    return moving


def nodes_between(first: torch.fx.Node, end: torch.fx.Node) -> list[torch.fx.Node]:
    """The nodes from `first` up to `end` (not included) in graph order."""
    nodes, node = [], first
    while node is not end:
        nodes.append(node)
        node = node.next
    return nodes


def check_order(gm: torch.fx.GraphModule) -> None:
    """After nodes moved, each must still come after what it reads; where one does not (a bug
    in a move), a warning, as the wrapper may still run it (views it folds into loads)."""
    try:
        gm.graph.lint()
    except RuntimeError as exc:
        warnings.warn(f"xpu_lite: nodes out of order after fusion moved them (a bug in xpu_lite: please report it): {exc}",
                      stacklevel=2)


def writes(node: torch.fx.Node) -> bool:
    return isinstance(node.target, torch._ops.OpOverload) and node.target._schema.is_mutable
