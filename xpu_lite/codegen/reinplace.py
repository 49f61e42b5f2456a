"""Custom ops and user Triton kernels that write their inputs, called in place where
nothing can tell.

Input: the aten FX graph. Output: {node name: the bases it must still copy} for the
functionalized writers that need not copy every tensor they write: `auto_functionalized_v2`
(a custom op with `mutates_args`) and `triton_kernel_wrapper_functional` (a user's
@triton.jit kernel). Eager's implementation of either higher-order op copies each tensor
written (a "base"), calls the op or kernel on the copies and returns them; a graph input's
new value is then copied back into it (`copy_`). For a KV cache that is two copies of the
cache per step, where eager calls the op on the cache itself. The wrapper passes the bases
that stay copied (`_only_clone_these_bases`, by index; `tensors_to_clone`, by name), as
Inductor's reinplacing pass does; the op or kernel then writes the others itself.

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

from .. import _torch_compat as compat
from ..lowering.views import storage_id

_AUTO_FUNCTIONALIZED = torch.ops.higher_order.auto_functionalized_v2
_TRITON_KERNEL = compat.TRITON_KERNEL_FUNCTIONAL


def plan_reinplace(gm: torch.fx.GraphModule) -> dict[str, tuple[Any, ...]]:
    """Writer node name -> the bases it still copies (indices for auto_functionalized_v2,
    argument names for a Triton kernel), for each writer that writes at least one base in place."""
    order = {node: i for i, node in enumerate(gm.graph.nodes)}
    by_storage: dict[int, list[torch.fx.Node]] = {}
    for node in gm.graph.nodes:
        if (key := storage_id(node.meta.get("val"))) is not None:
            by_storage.setdefault(key, []).append(node)
    plan = {}
    for node in gm.graph.nodes:
        bases = _bases(node)
        if not bases:
            continue
        keys = [storage_id(base.meta.get("val")) if isinstance(base, torch.fx.Node) else None for _, _, base in bases]
        copied = tuple(ident for (ident, result, base), key in zip(bases, keys)
                       if key is None or keys.count(key) > 1 or not _in_place_is_unseen(node, result, base, by_storage[key], order))
        if len(copied) < len(bases):
            plan[node.name] = copied
    return plan


def _bases(node: torch.fx.Node) -> list[tuple[Any, Any, Any]]:
    """(how the higher-order op names it, where the node's result holds its new value,
    the base) for each tensor a writer node copies; [] for other nodes."""
    if node.target is _TRITON_KERNEL:
        return [(name, name, node.kwargs["kwargs"][name]) for name in node.kwargs["tensors_to_clone"]]
    if node.target is not _AUTO_FUNCTIONALIZED:
        return []
    bases, val = list(node.kwargs.get("_all_bases", ())), node.meta.get("val")
    first = len(val) - len(bases) if isinstance(val, (tuple, list)) else None
    return [(i, None if first is None else first + i, base) for i, base in enumerate(bases)]


def triton_kernel_in_place(*, returned: list[str], **hop_kwargs: Any) -> dict[str, Any]:
    """triton_kernel_wrapper_functional copying only its `tensors_to_clone`: the result
    holds each of `returned` (the names the graph reads back), the copy where there is
    one, else the argument itself, which the kernel wrote in place."""
    result = _TRITON_KERNEL(**hop_kwargs)
    return {name: result[name] if name in result else hop_kwargs["kwargs"][name] for name in returned}


def reinplaced_call(node: torch.fx.Node, op: Any, kwargs: dict[str, Any], copied: tuple[Any, ...]) -> tuple[Any, dict[str, Any]]:
    """The call the wrapper makes for a writer node that still copies `copied` only."""
    if node.target is _TRITON_KERNEL:
        return triton_kernel_in_place, {**kwargs, "tensors_to_clone": list(copied), "returned": kwargs["tensors_to_clone"]}
    return op, {**kwargs, "_only_clone_these_bases": copied}


def _in_place_is_unseen(node: torch.fx.Node, result: Any, base: torch.fx.Node, aliases: list[torch.fx.Node],
                        order: dict[torch.fx.Node, int]) -> bool:
    if base.op == "placeholder":
        written_back = _copy_back(node, result, base)
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


def _copy_back(node: torch.fx.Node, result: Any, base: torch.fx.Node) -> torch.fx.Node | None:
    """The `copy_(base, node's result[result])` that writes the call's new value back."""
    if result is None:
        return None
    for user in base.users:
        if (user.target is torch.ops.aten.copy_.default and user.args[0] is base and isinstance(user.args[1], torch.fx.Node)
                and user.args[1].target is operator.getitem and user.args[1].args == (node, result)):
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
