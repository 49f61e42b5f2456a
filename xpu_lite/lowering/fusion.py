"""Kernel-eligible nodes -> fused groups -> ir.Kernel.

Input: the aten graph and its decisions. Output: one Group per run of consecutive KERNEL
nodes with the same iteration space (output sizes). A group loads what it reads from
outside, computes its nodes in registers, and stores only the values something outside
the group reads, at the strides eager would give them.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import sympy
import torch
import torch.fx
from torch.utils._sympy.functions import FloorDiv, ModularIndexing

from .._torch_compat import sym_expr
from . import ir
from .decisions import Decision, DecisionKind
from .registry import LOWERINGS


@dataclasses.dataclass(frozen=True)
class Group:
    kernel: ir.Kernel
    members: tuple[torch.fx.Node, ...]
    stored: tuple[torch.fx.Node, ...]  # members read outside the group, in kernel.outputs order
    external: tuple[torch.fx.Node, ...]  # tensors loaded, in kernel.inputs order


def fuse(gm: torch.fx.GraphModule, decisions: dict[str, Decision]) -> list[Group]:
    def is_view(node: Any) -> bool:
        return isinstance(node, torch.fx.Node) and node.name in decisions and decisions[node.name].kind is DecisionKind.VIEW

    runs: list[list[torch.fx.Node]] = []
    for node in gm.graph.nodes:
        decision = decisions.get(node.name)
        if is_view(node):
            continue  # index math: no kernel of its own, does not end a run
        if decision is None or decision.kind is not DecisionKind.KERNEL:
            if node.op != "placeholder":
                runs.append([])
            continue
        current = runs[-1] if runs else []
        # a value computed in this kernel cannot be re-read through a view of it: start a new kernel
        reads_own_view = any(is_view(a) and view_root(a, is_view) in current for a in node.args)
        if current and _sizes(current[0]) == _sizes(node) and not reads_own_view:
            current.append(node)
        else:
            runs.append([node])
    return [build_group(f"kernel_{i}", run, is_view) for i, run in enumerate(r for r in runs if r)]


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


def index_expr(out_sizes: tuple[sympy.Expr, ...], sizes: tuple[sympy.Expr, ...], strides: tuple[sympy.Expr, ...]) -> sympy.Expr:
    """Memory offset of the element at flat output position xindex, for a tensor with
    `sizes`/`strides` broadcast (aligned right) to `out_sizes`."""
    if sizes == out_sizes and strides == contiguous_strides(out_sizes):
        return ir.XINDEX
    rank = len(out_sizes)
    inner = contiguous_strides(out_sizes)
    offset: sympy.Expr = sympy.Integer(0)
    for d, (size, stride) in enumerate(zip(sizes, strides)):
        out_dim = rank - len(sizes) + d
        if size == 1 and out_sizes[out_dim] != 1:
            continue  # broadcast dim
        coord = FloorDiv(ir.XINDEX, inner[out_dim]) if out_dim == 0 else ModularIndexing(ir.XINDEX, inner[out_dim], out_sizes[out_dim])
        offset = offset + coord * stride
    return offset


class KernelBuilder:
    def __init__(self, out_sizes: tuple[sympy.Expr, ...]) -> None:
        self.out_sizes = out_sizes
        self.values: list[ir.Value] = []
        self.inputs: dict[torch.fx.Node, ir.Buffer] = {}
        self.loaded: dict[torch.fx.Node, int] = {}

    def _add(self, value: ir.Value) -> int:
        self.values.append(value)
        return len(self.values) - 1

    def load(self, node: torch.fx.Node, root: torch.fx.Node | None = None) -> int:
        """Load `node`'s elements; for a view, read its root buffer with the view's strides."""
        if node not in self.loaded:
            root = node if root is None else root
            val, root_val = node.meta["val"], root.meta["val"]
            sizes, strides = _sizes(node), _strides(val)
            if root not in self.inputs:
                self.inputs[root] = ir.Buffer(f"in_ptr{len(self.inputs)}", root_val.dtype, _sizes(root), _strides(root_val))
            offset = sym_expr(val.storage_offset()) - sym_expr(root_val.storage_offset()) if root is not node else 0
            index = index_expr(self.out_sizes, sizes, strides) + offset
            self.loaded[node] = self._add(ir.Load(self.inputs[root].name, index, ir.compute_dtype(val.dtype)))
        return self.loaded[node]

    def constant(self, value: Any, dtype: torch.dtype) -> int:
        return self._add(ir.Constant(value, dtype))

    def sym(self, node: torch.fx.Node) -> int:
        return self._add(ir.SymValue(sym_expr(node.meta["val"]), torch.int64))

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



def build_group(name: str, members: list[torch.fx.Node], is_view: Any = lambda node: False) -> Group:
    out_sizes = _sizes(members[0])
    builder = KernelBuilder(out_sizes)
    value_of: dict[torch.fx.Node, int] = {}
    member_set = set(members)
    for node in members:
        operands: list[Any] = []
        for arg in node.args:
            if isinstance(arg, torch.fx.Node):
                if arg in member_set:
                    operands.append(ir.Ref(value_of[arg]))
                elif isinstance(arg.meta.get("val"), torch.SymInt):
                    operands.append(ir.Ref(builder.sym(arg)))
                else:
                    operands.append(ir.Ref(builder.load(arg, view_root(arg, is_view))))
            else:
                operands.append(arg)  # rules decide how a non-tensor argument is used
        value_of[node] = LOWERINGS.rule(node)(builder, node, *operands)
    stored = [n for n in members if any(user not in member_set for user in n.users)]
    outputs, stores = [], []
    for i, node in enumerate(stored):
        val = node.meta["val"]
        buf = ir.Buffer(f"out_ptr{i}", val.dtype, out_sizes, _strides(val))
        outputs.append(buf)
        stores.append(ir.Store(buf.name, index_expr(out_sizes, out_sizes, buf.strides), value_of[node]))
    numel = sympy.Mul(*out_sizes)
    kernel = ir.Kernel(
        name, numel, tuple(builder.inputs.values()), tuple(outputs), tuple(builder.values), tuple(stores),
        tuple(n.name for n in members),
    )
    return Group(ir.verify(kernel), tuple(members), tuple(stored), tuple(builder.inputs))
