"""Custom ops that write their inputs, called in place where nothing can tell.

Input: the aten FX graph. Output: {node name: the bases it must still copy} for the
`auto_functionalized_v2` nodes (a custom op with `mutates_args`, functionalized) that need
not copy every tensor the op writes. Eager's implementation of the higher-order op copies
each one (a "base"), calls the op on the copies and returns them; a graph input's new
value is then copied back into it (`copy_`). For a KV cache that is two copies of the cache
per step, where eager calls the op on the cache itself. The wrapper passes the bases that
stay copied as `_only_clone_these_bases`, as Inductor's reinplacing pass does; the op then
writes the others itself.

A base is written in place only where nothing can observe that it was:
- a graph input: a `copy_` later in the graph writes this call's new value into it (the
  program does mutate it), and nothing that reads its storage (it or a view of it) runs
  between the call and that `copy_` (its own `copy_` of itself is then a no-op);
- a value the graph made: nothing reads its storage after the call, and no graph input or
  constant shares that storage;
- no other base of the call shares its storage.
"""
from __future__ import annotations

import operator
from typing import Any

import torch
import torch.fx

from ..lowering.views import storage_id

_AUTO_FUNCTIONALIZED = torch.ops.higher_order.auto_functionalized_v2


def plan_reinplace(gm: torch.fx.GraphModule) -> dict[str, tuple[int, ...]]:
    """auto_functionalized_v2 node name -> indices of the bases it still copies, for each
    such node that writes at least one base in place."""
    order = {node: i for i, node in enumerate(gm.graph.nodes)}
    by_storage: dict[int, list[torch.fx.Node]] = {}
    for node in gm.graph.nodes:
        if (key := storage_id(node.meta.get("val"))) is not None:
            by_storage.setdefault(key, []).append(node)
    plan = {}
    for node in gm.graph.nodes:
        if node.target is not _AUTO_FUNCTIONALIZED:
            continue
        bases = list(node.kwargs.get("_all_bases", ()))
        keys = [storage_id(base.meta.get("val")) if isinstance(base, torch.fx.Node) else None for base in bases]
        copied = tuple(i for i, (base, key) in enumerate(zip(bases, keys))
                       if key is None or keys.count(key) > 1 or not _in_place_is_unseen(node, i, base, by_storage[key], order))
        if len(copied) < len(bases):
            plan[node.name] = copied
    return plan


def _in_place_is_unseen(node: torch.fx.Node, i: int, base: torch.fx.Node, aliases: list[torch.fx.Node],
                        order: dict[torch.fx.Node, int]) -> bool:
    if base.op == "placeholder":
        written_back = _copy_back(node, i, base)
        if written_back is None or any(alias.op == "get_attr" for alias in aliases):
            return False
        end = order[written_back]
    elif any(alias.op != "call_function" for alias in aliases):  # a view of an input or a constant
        return False
    else:
        end = None
    for alias in aliases:
        for user in alias.users:
            if user is node or order[user] < order[node] or (end is not None and order[user] >= end):
                continue
            return False
    return True


def _copy_back(node: torch.fx.Node, i: int, base: torch.fx.Node) -> torch.fx.Node | None:
    """The `copy_(base, node's new value of base i)` that writes the call's result back."""
    val: Any = node.meta.get("val")
    if not isinstance(val, (tuple, list)):
        return None
    position = len(val) - len(node.kwargs["_all_bases"]) + i
    for user in base.users:
        if (user.target is torch.ops.aten.copy_.default and user.args[0] is base and isinstance(user.args[1], torch.fx.Node)
                and user.args[1].target is operator.getitem and user.args[1].args == (node, position)):
            return user
    return None


def direct_call(node: torch.fx.Node) -> tuple[torch._ops.OpOverload, dict[str, Any], int] | None:
    """(op, its keyword arguments, how many values it returns) of an auto_functionalized_v2
    node whose every mutable argument is a base itself (not a view of one), for the wrapper
    to call the op itself where every base is written in place, as eager does, without the
    higher-order op's dispatch; None for anything else (views, lists, a higher-order op as
    the op, an argument encoding this does not know)."""
    op = node.args[0] if node.args else None
    if node.target is not _AUTO_FUNCTIONALIZED or not isinstance(op, torch._ops.OpOverload):
        return None
    kwargs = {k: v for k, v in node.kwargs.items() if k != "_only_clone_these_bases"}
    bases = kwargs.pop("_all_bases", [])
    call = {}
    for arg in op._schema.arguments:
        if arg.alias_info is not None and arg.alias_info.is_write:
            index = kwargs.pop(f"_{arg.name}_base_index", None)
            if not isinstance(arg.type, torch.TensorType) or not isinstance(index, int):
                return None
            call[arg.name] = bases[index]
        elif arg.name in kwargs:
            call[arg.name] = kwargs.pop(arg.name)
    return None if kwargs else (op, call, len(op._schema.returns))
