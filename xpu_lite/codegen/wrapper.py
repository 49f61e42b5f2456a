"""aten FX graph + decisions -> one deterministic Python module with `call(args)`.

Input: the graph from AOTAutograd and {node name: Decision}. Output: WrapperCode (source
text plus the constants it references). The module binds size symbols from its inputs
(SymInt arguments and input tensor sizes) and from data-dependent outputs, computes size
arithmetic as plain Python, checks runtime asserts, calls fallbacks as
`torch.ops.<ns>.<op>.<overload>(...)`, frees buffers and inputs after their last use, and emits no
call whose result nobody reads.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import operator
from collections.abc import Iterable, Sequence
from typing import Any

import sympy
import torch
import torch.fx

from .. import _torch_compat as compat
from .._torch_compat import sym_expr
from ..decomp import is_random
from ..lowering import Decision, DecisionKind, LoweringError, ir
from ..lowering.reduction import NEEDS_ELEMENTS
from ..lowering.kernel_builder import Group
from ..report import COUNTERS
from ..runtime import gpu_launch_options, index_type, pick_block, pick_reduction, pick_tile
from .calls import CallPlan
from .emitter import Emitter
from .printer import pexpr
from .prims import aten_arguments, host_cast
from .reinplace import direct_call, reinplaced_call
from .triton import kernel_signature

aten = torch.ops.aten

_BINARY = {
    operator.add: "+", operator.sub: "-", operator.mul: "*", operator.floordiv: "//",
    operator.truediv: "/", operator.mod: "%", operator.pow: "**", operator.eq: "==",
    operator.ne: "!=", operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">=",
    operator.and_: "&", operator.or_: "|",
}
_CALLS = {
    operator.neg: "-({})", operator.pos: "+({})", operator.not_: "not {}", torch.sym_not: "not {}",
    operator.abs: "abs({})", torch.sym_float: "float({})", torch.sym_int: "int({})",
    torch.sym_max: "max({}, {})", torch.sym_min: "min({}, {})", torch.sym_sqrt: "math.sqrt({})",
    torch.sym_ite: "({1} if {0} else {2})", aten.sym_size.int: "{}.size({})",
    aten.sym_stride.int: "{}.stride({})", aten.sym_numel.default: "{}.numel()",
    aten.sym_storage_offset.default: "{}.storage_offset()",
}


@dataclasses.dataclass(frozen=True)
class WrapperCode:
    name: str
    source: str
    constants: dict[str, Any]
    emitted: frozenset[str]  # FX nodes that became a line of code (the rest was dead)


@dataclasses.dataclass(frozen=True)
class _Binding:
    producer: torch.fx.Node
    access: str  # "{}.size(0)" formatted with the producer's variable


def generate_wrapper(
    gm: torch.fx.GraphModule,
    decisions: dict[str, Decision],
    name: str,
    device_type: str,
    groups: Sequence[Group] = (),
    kernels: dict[str, Any] | None = None,
    calls: CallPlan = CallPlan(),
) -> WrapperCode:
    return _WrapperBuilder(gm, decisions, name, list(groups), kernels or {}, device_type, calls).build()


class _WrapperBuilder:
    def __init__(
        self, gm: torch.fx.GraphModule, decisions: dict[str, Decision], name: str,
        groups: list[Group], kernels: dict[str, Any], device_type: str, calls: CallPlan,
    ) -> None:
        self.gm, self.decisions, self.name, self.calls = gm, decisions, name, calls
        self.groups, self.kernels, self.device_type = groups, kernels, device_type
        self.group_of = {member: g for g in groups for member in g.members}
        self.nodes = list(gm.graph.nodes)
        by_name = {node.name: node for node in self.nodes}
        self.written_into = {by_name[src]: by_name[copy] for copy, src in calls.writebacks.items()}  # stored -> copy_
        self.position = {node: i for i, node in enumerate(self.nodes)}
        self.placeholders = [n for n in self.nodes if n.op == "placeholder"]
        self.output = next(n for n in self.nodes if n.op == "output")
        self.bindings: dict[sympy.Symbol, _Binding] = {}
        self.bound_at: dict[torch.fx.Node, list[sympy.Symbol]] = {}
        self.size_expr: dict[torch.fx.Node, sympy.Expr] = {}  # size nodes printed from symbols
        self.deps: dict[torch.fx.Node, list[torch.fx.Node]] = {}
        self.names: dict[torch.fx.Node, str] = {}
        self.constants: dict[str, Any] = {}
        self.hoisted: dict[tuple[torch.fx.Node, str], str] = {}  # a host scalar's value or device copy, once a call

    # -- analysis ---------------------------------------------------------------------
    def _bind_from(self, node: torch.fx.Node) -> None:
        """Record every symbol that `node`'s value exposes as a bare size or scalar."""
        val = node.meta.get("val")
        for access, expr in _exposed(val):
            if isinstance(expr, sympy.Symbol) and expr not in self.bindings:
                self.bindings[expr] = _Binding(node, access)
                self.bound_at.setdefault(node, []).append(expr)

    def _analyse(self) -> None:
        for node in self.nodes:
            if node.op == "placeholder":
                self.deps[node] = []
            elif node.op == "output":
                self.deps[node] = list(node.all_input_nodes)
            elif node.op == "get_attr":
                self.deps[node] = []
            elif node in self.group_of:
                group = self.group_of[node]
                if node is group.members[0]:
                    symbols = _group_symbols(group)
                    missing = symbols - self.bindings.keys()
                    if missing:
                        raise LoweringError(group.kernel.name, node.name, f"size symbols {sorted(map(str, missing))} are not available in the wrapper")
                    producers = {self.bindings[s].producer for s in symbols}
                    into = [] if group.into is None else [group.into]
                    self.deps[node] = sorted({*group.external, *into, *producers}, key=self.position.__getitem__)
                else:
                    self.deps[node] = [group.members[0]]
            else:
                kind = self.decisions[node.name].kind
                expr = sym_expr(node.meta.get("val")) if kind is DecisionKind.SIZE else None
                if expr is not None and expr.free_symbols <= self.bindings.keys():
                    self.size_expr[node] = expr
                    self.deps[node] = sorted({self.bindings[s].producer for s in expr.free_symbols}, key=self.position.__getitem__)
                else:
                    self.deps[node] = list(node.all_input_nodes)
            self._bind_from(node)

    def _is_root(self, node: torch.fx.Node) -> bool:
        if node.op == "output":
            return True
        if node.op != "call_function":
            return False
        if self.decisions[node.name].kind is DecisionKind.ASSERT:
            return True
        target = node.target
        # is_impure: what FX's dead-code elimination keeps, asserts among it (one_hot's
        # `_assert_async` that its classes are in range: removed, a bad class gave a result)
        return node.is_impure() or isinstance(target, torch._ops.OpOverload) and (target._schema.is_mutable or is_random(target))

    def _live(self) -> set[torch.fx.Node]:
        live: set[torch.fx.Node] = set(self.placeholders)
        stack = [n for n in self.nodes if self._is_root(n)]
        while stack:
            node = stack.pop()
            if node not in live or node.op == "placeholder":
                live.add(node)
                stack.extend(d for d in self.deps[node] if d not in live)
        return live

    # -- emission ---------------------------------------------------------------------
    def build(self) -> WrapperCode:
        self._analyse()
        live = self._live()
        needed = set().union(*(e.free_symbols for n, e in self.size_expr.items() if n in live))
        needed |= set().union(*(_group_symbols(g) for g in self.groups if g.members[0] in live))
        last_use = _last_uses([n for n in self.nodes if n in live], self.deps)
        # input tensors are freed too: a backward's are the saved activations, AOTAutograd's no more
        inputs = {n for n in self.placeholders if isinstance(n.meta.get("val"), torch.Tensor)}
        unread = inputs - {dep for n in self.nodes if n in live for dep in self.deps[n]}

        body = Emitter()
        if not any(compat.is_custom_op(n.target) for n in self.nodes):  # else the check has work to do: keep it
            self.constants.update(
                _dispatch_modes=compat.dispatch_mode_count,
                _aliasing_check_on_top=compat.aliasing_check_on_top,
                _pop_dispatch_mode=compat.pop_dispatch_mode,
            )
            body.line("if _dispatch_modes() and _aliasing_check_on_top():", "AOTAutograd's first call: its custom-op check")
            with body.indent():
                body.line("with _pop_dispatch_mode():", "is a dispatch mode, under which composite ops leave eager's")
                with body.indent():
                    body.line("return call(args)", "path (eigvalsh computes vectors too): run outside it")
        names = [f"arg{i}" for i in range(len(self.placeholders))]
        self.names.update(zip(self.placeholders, names))
        if names:
            body.line(f"{', '.join(names)}{',' if len(names) == 1 else ''} = args", ", ".join(n.name for n in self.placeholders))
        body.line("args.clear()", "inputs are owned here from now on (boxed calling convention)")
        counter = 0
        emitted: set[str] = set()
        for node in self.nodes:
            if node not in live or node.op == "output":
                continue
            if node in self.group_of:
                group = self.group_of[node]
                if node is group.members[0]:
                    for stored in group.stored:
                        self.names[stored] = f"buf{counter}"
                        counter += 1
                    self._emit_group(body, group)
                    emitted.update(n.name for n in (*group.inlined, *group.members))
            elif node.op == "call_function":
                var = f"buf{counter}"
                counter += 1
                self.names[node] = var
                self._emit_node(body, node, var)
                emitted.add(node.name)
            elif node.op == "get_attr":
                value = operator.attrgetter(str(node.target))(self.gm)  # a dotted path
                # a control-flow op's subgraph by its name (`_true_graph_0`), a tensor by number
                var = f"_{node.target}" if isinstance(value, torch.fx.GraphModule) else f"_const{len(self.constants)}"
                self.names[node] = var
                self.constants[var] = value
                emitted.add(node.name)
            elif node.op != "placeholder":
                raise LoweringError(node.op, node.name, "unsupported FX node kind in an aten graph")
            for symbol in self.bound_at.get(node, []):
                if symbol in needed:
                    access = self.bindings[symbol].access.format(self.names[node])
                    body.line(f"{symbol} = {access}", f"size symbol {symbol} from {node.name}")
            if node in unread:
                body.line(f"del {self.names[node]}", "nothing reads this input: freed now")
            dead = [self.names[d] for d in last_use.get(node, []) if (d.op == "call_function" or d in inputs) and self.names.get(d)]
            if dead:
                body.line(f"del {', '.join(dead)}", f"last use in {node.name}")
        outputs = self._src(self.output.args[0])
        body.line(f"return {outputs}", "output")

        out = Emitter()
        out.line(f"# xpu_lite wrapper for graph {self.name}. Generated code: deterministic, do not edit.")
        if "math." in body.text():
            out.line("import math")
        out.line("import torch")
        out.line()
        out.line()
        out.line("def call(args):")
        with out.indent():
            out.lines(body.text().rstrip("\n").split("\n"))
        return WrapperCode(self.name, out.text(), dict(self.constants), frozenset(emitted))

    def _emit_node(self, body: Emitter, node: torch.fx.Node, var: str) -> None:
        decision = self.decisions[node.name]
        kind, target = decision.kind, node.target
        if node.name in self.calls.identities:
            body.line(f"{var} = {self._src(node.args[0])}", f"{node.name} (detach: the same tensor, grad is off in a compiled graph)")
        elif node.name in self.calls.writebacks:
            body.line(f"{var} = {self._src(node.args[0])}", f"{node.name} (no call: {self._src(node.args[1])}'s kernel stored into it)")
        elif node.name in self.calls.host_values:
            value, dtype = self._by_value(body, node.args[0]), self.calls.host_values[node.name]
            if dtype in (torch.float64, node.args[0].meta["val"].dtype):  # the float holds it exactly already
                body.line(f"{var} = {value}", f"{node.name} (to {dtype}: the same float, no tensor)")
            else:
                self.constants.setdefault("_host_cast", host_cast)
                body.line(f"{var} = _host_cast({value}, {dtype})", f"{node.name} (a float, no tensor: the kernels read it by value)")
        elif kind is DecisionKind.SIZE:
            expr = self.size_expr.get(node)
            if expr is not None:
                body.line(f"{var} = {pexpr(expr)}", node.name)
            else:
                args = [self._src(a) for a in node.args]
                text = f"{args[0]} {_BINARY[target]} {args[1]}" if target in _BINARY else _CALLS[target].format(*args)
                body.line(f"{var} = {text}", node.name)
        elif kind is DecisionKind.ASSERT:
            self._emit_assert(body, node, var)
        elif kind is DecisionKind.VIEW:  # something outside the kernels reads it: the eager alias, no copy
            body.line(f"{var} = {self._call_text(target)}({self._call_args(node.args, node.kwargs)})", f"{node.name} (view)")
        elif kind is DecisionKind.UNPACK:
            body.line(f"{var} = {self._src(node.args[0])}[{self._src(node.args[1])}]", node.name)
        else:
            variant = self.calls.inplace.get(node.name)
            op, args, kwargs = variant or target, node.args, node.kwargs
            if (copied := self.calls.copied_bases.get(node.name)) is not None:  # the rest written in place (reinplace.py)
                if not copied and (direct := direct_call(node)) is not None:  # the op itself, then the bases, as the HOP returns
                    call, bases = self._call_text(direct[0]), "".join(f", {self._src(b)}" for b in node.kwargs["_all_bases"])
                    body.line(f"{var} = ({'*' * (direct[2] > 1)}{call}({self._call_args((), direct[1])}){bases})",
                              f"{node.name} (the op itself, writing its inputs in place)")
                    return
                op, kwargs = reinplaced_call(node, op, kwargs, copied)
            comment = node.name if variant is None else f"{node.name} (in place: nothing reads {self._src(node.args[0])} again)"
            if node.name in self.calls.prims:
                op, (args, kwargs) = self.calls.prims[node.name], aten_arguments(node)
                comment += f" ({target} as {op})"
            binding = self.calls.bindings.get(node.name)
            if binding is not None:
                comment += f" [{op}]"
            body.line(f"{var} = {binding or self._call_text(op)}({self._call_args(args, kwargs)})", comment)

    def _emit_group(self, body: Emitter, group: Group) -> None:
        kernel = group.kernel
        function, label = kernel.function, f"{kernel.name}: {', '.join(kernel.nodes)}"
        for node, buf in zip(group.stored, kernel.outputs):
            val = node.meta["val"]
            if node in self.written_into:  # an input's new value, stored into the input (writebacks.py)
                copy = self.written_into[node]
                body.line(f"{self.names[node]} = {self._src(copy.args[0])}",
                          f"{node.name} (stored into it in place by {kernel.name}: {copy.name}'s destination)")
                continue
            if group.into is not None:  # a scatter: its input's buffer, which nothing reads again
                body.line(f"{self.names[node]} = {self.names[group.into]}", f"{node.name} (stored into in place by {kernel.name})")
                continue
            sizes = self._src(tuple(buf.sizes))
            strides = self._src(tuple(buf.strides))
            body.line(
                f"{self.names[node]} = torch.empty_strided({sizes}, {strides}, dtype={val.dtype}, device={self._src(val.device)})",
                f"{node.name} (stored by {kernel.name})",
            )
        self.constants.setdefault("_pick_block", pick_block)
        self.constants.setdefault("_index_type", index_type)
        self.constants.setdefault("_COUNTERS", COUNTERS)
        args = [self._by_value(body, n) if buf.by_value else self._on_device(body, n, group)
                for n, buf in zip(group.external, kernel.inputs, strict=True)] + [self.names[n] for n in group.stored]
        buffers = {b.name for b in (*kernel.inputs, *kernel.outputs)}
        args += [name for name, kind in kernel_signature(kernel).items() if kind in ("i32", "fp32") and name not in buffers]  # numels, symbols
        for symbol, expr in kernel.lifted:
            what = "a size the kernel cannot compute" if symbol.is_integer else "a SymFloat operand, a float32 argument"
            body.line(f"{symbol} = {pexpr(expr)}", f"{kernel.name}: {what}")
        tile = kernel.tile
        if tile is None:
            body.line(f"xnumel = {pexpr(kernel.numel)}", kernel.name)
        else:
            for name, size in (("znumel", tile.znumel), ("ynumel", tile.ynumel), ("xnumel", tile.xnumel)):
                body.line(f"{name} = {pexpr(size)}", f"{kernel.name}: tiled over dim {tile.dim}")
        fake = group.stored[0].meta["val"]  # its ShapeEnv knows the range of every size symbol
        if kernel.is_reduction:
            body.line(f"rnumel = {pexpr(kernel.rnumel)}", kernel.name)
            needs_elements = any(isinstance(v, ir.Reduce) and v.op in NEEDS_ELEMENTS for v in kernel.values)
            if needs_elements and not compat.provably_positive(kernel.rnumel, fake):
                body.line("if rnumel == 0:", kernel.name)
                with body.indent():
                    message = f"xpu_lite: {', '.join(kernel.nodes)}: cannot take the max/min of an empty dimension (as in eager)"
                    body.line(f"raise IndexError({message!r})")
        launch_options = {} if self.device_type == "cpu" else gpu_launch_options(kernel.checks_bounds, self.device_type)
        options = ", INDEX=index" + "".join(f", {k}={v!r}" for k, v in launch_options.items())
        # a size that may be 0 at run time (unbacked, or a difference such as x[3:]'s): launch
        # nothing then; a backed size is at least 2 (Dynamo specializes 0 and 1) and needs no check
        guard = not compat.provably_positive(kernel.numel, fake)
        if guard:
            body.line("if xnumel > 0:" if tile is None else "if znumel * ynumel * xnumel > 0:", kernel.name)
        with body.indent() if guard else contextlib.nullcontext():
            spans = sorted({pexpr(e) for e in {b.extent() for b in (*kernel.inputs, *kernel.outputs)} | {kernel.numel}})
            span = f"max({', '.join(spans)})" if len(spans) > 1 else spans[0]
            body.line(f"index = _index_type({span})", f"{kernel.name}: int64 offsets past 2**31 elements")
            if kernel.ordered:  # the looped source, one element of each row at a time
                self.constants[f"{function}_looped"] = self.kernels[f"{function}_looped"]
                body.line(f"xblock = _pick_block(xnumel, {self.device_type!r})", kernel.name)
                body.line(f"{function}_looped[((xnumel + xblock - 1) // xblock,)]({', '.join(args)}, XBLOCK=xblock, "
                          f"RBLOCK=1{options})", label)
                body.line("_COUNTERS.count_reduction(False)", kernel.name)
            elif kernel.is_reduction:
                self.constants.setdefault("_pick_reduction", pick_reduction)
                for variant in ("persistent", "looped"):
                    self.constants[f"{function}_{variant}"] = self.kernels[f"{function}_{variant}"]
                body.line(f"xblock, rblock, persistent = _pick_reduction(xnumel, rnumel, {self.device_type!r})", kernel.name)
                body.line(f"kernel = {function}_persistent if persistent else {function}_looped", kernel.name)
                body.line(f"kernel[((xnumel + xblock - 1) // xblock,)]({', '.join(args)}, XBLOCK=xblock, RBLOCK=rblock{options})", label)
                body.line("_COUNTERS.count_reduction(persistent)", kernel.name)
            elif tile is None:
                self.constants[function] = self.kernels[function]
                body.line(f"xblock = _pick_block(xnumel, {self.device_type!r})", kernel.name)
                body.line(f"{function}[((xnumel + xblock - 1) // xblock,)]({', '.join(args)}, XBLOCK=xblock{options})", label)
                body.line("_COUNTERS.kernel_launches += 1", kernel.name)
            else:
                self.constants[function] = self.kernels[function]
                self.constants.setdefault("_pick_tile", pick_tile)
                body.line(f"xblock, yblock = _pick_tile(xnumel, ynumel, {self.device_type!r})", kernel.name)
                grid = "(xnumel + xblock - 1) // xblock * ((ynumel + yblock - 1) // yblock) * znumel"
                body.line(f"{function}[({grid},)]({', '.join(args)}, XBLOCK=xblock, YBLOCK=yblock{options})", label)
                body.line("_COUNTERS.kernel_launches += 1", kernel.name)

    def _emit_assert(self, body: Emitter, node: torch.fx.Node, var: str) -> None:
        target = node.target
        value = self._src(node.args[0])
        if target is aten._assert_scalar.default:
            cond = node.args[0]
            expr = sym_expr(cond.meta.get("val")) if isinstance(cond, torch.fx.Node) else sym_expr(cond)
            text = str(expr) if expr is not None else value
            check, message = value, f"runtime assertion failed: {text}"
        else:  # sym_constrain_range(_for_size): value range of a data-dependent size
            low = node.kwargs.get("min", node.args[1] if len(node.args) > 1 else None)
            high = node.kwargs.get("max", node.args[2] if len(node.args) > 2 else None)
            if target is aten.sym_constrain_range_for_size.default and low is None:
                low = 0
            parts = [f"{value} >= {low}" if low is not None else "", f"{value} <= {high}" if high is not None else ""]
            check = " and ".join(p for p in parts if p) or "True"
            message = f"data-dependent size out of range: {check}"
        body.line(f"if not ({check}):", node.name)
        with body.indent():
            body.line(f"raise RuntimeError({('xpu_lite: ' + message + ' [node ' + node.name + ']')!r})")

    def _call_text(self, target: Any) -> str:
        if isinstance(target, torch._ops.OpOverload):
            return f"torch.ops.{target}"
        if compat.is_higher_order(target) and getattr(torch.ops.higher_order, target.name(), None) is target:
            return f"torch.ops.higher_order.{target.name()}"
        own = (getattr(target, "__module__", None) or "").startswith("xpu_lite.")  # a helper of ours, by its name
        var = f"_{target.__name__}" if own else f"_fn{len(self.constants)}"
        self.constants[var] = target
        return var

    def _call_args(self, args: Iterable[Any], kwargs: dict[str, Any]) -> str:
        parts = [self._src(a) for a in args] + [f"{k}={self._src(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    def _by_value(self, body: Emitter, node: torch.fx.Node) -> str:
        """A 0-dim host float a kernel reads by value (ir.Buffer.by_value): its `.item()`,
        taken once a call, at the first kernel that reads it, for every kernel that does; a
        cast the wrapper computes (CallPlan.host_values) is that float already."""
        if node.name in self.calls.host_values:
            return self.names[node]
        return self._hoist(body, node, "value", f"{self.names[node]}.item()", "by value, for the kernels that read it")

    def _on_device(self, body: Emitter, node: torch.fx.Node, group: Group) -> str:
        """A kernel input by name; a cpu 0-dim tensor read by a device kernel (an input, or a
        decomposition's scalar_tensor that ran eagerly) is copied to the kernel's device,
        once a call, for every kernel that reads it."""
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor) or val.device.type == self.device_type:
            return self.names[node]
        device = group.stored[0].meta["val"].device
        copy = f"{self.names[node]}.to({self._src(device)})"
        return self._hoist(body, node, f"on_{device.type}{device.index or ''}", copy, f"copied to {device}, for the kernels that read it")

    def _hoist(self, body: Emitter, node: torch.fx.Node, suffix: str, expr: str, why: str) -> str:
        """`expr` of `node` computed once a call (group emission is straight-line code, so
        its first use comes first), named `<node>_<suffix>`."""
        key = (node, suffix)
        if key not in self.hoisted:
            self.hoisted[key] = f"{self.names[node]}_{suffix}"
            body.line(f"{self.hoisted[key]} = {expr}", f"{node.name} {why}")
        return self.hoisted[key]

    def _src(self, value: Any) -> str:
        if isinstance(value, sympy.Expr):
            return pexpr(value)
        if isinstance(value, torch.fx.Node):
            return self.names[value]
        if isinstance(value, (list, tuple)):
            inner = ", ".join(self._src(v) for v in value)
            return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
        if isinstance(value, dict):  # a higher-order op's keyword arguments (a user Triton kernel's)
            return "{" + ", ".join(f"{self._src(k)}: {self._src(v)}" for k, v in value.items()) + "}"
        if isinstance(value, float):
            if math.isnan(value):
                return "math.nan"
            if math.isinf(value):
                return "math.inf" if value > 0 else "-math.inf"
            return repr(value)
        if value is None or isinstance(value, (bool, int, str)):
            return repr(value)
        if isinstance(value, (torch.dtype, torch.layout, torch.memory_format)):
            return str(value)
        if isinstance(value, torch.device):
            return f"torch.device({str(value)!r})"
        if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return pexpr(value.node.expr)
        var = f"_const{len(self.constants)}"
        self.constants[var] = value
        return var


def _group_symbols(group: Group) -> set[sympy.Symbol]:
    kernel = group.kernel
    exprs = [kernel.numel, *(e for b in kernel.outputs for e in (*b.sizes, *b.strides))]
    exprs += [b.extent() for b in kernel.inputs]  # for the launch's index dtype
    exprs += [e for _, e in kernel.lifted]
    return (set(kernel.size_symbols) - {s for s, _ in kernel.lifted}) | set().union(*(e.free_symbols for e in exprs))


def _exposed(val: Any) -> list[tuple[str, sympy.Expr]]:
    """(access template, expression) pairs a runtime value exposes: sizes, strides, itself."""
    if isinstance(val, torch.Tensor):
        pairs = [(f"{{}}.size({d})", sym_expr(s)) for d, s in enumerate(val.shape)]
        if val.layout is torch.strided:
            pairs += [(f"{{}}.stride({d})", sym_expr(s)) for d, s in enumerate(val.stride())]
        return pairs
    if isinstance(val, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return [("{}", val.node.expr)]
    if isinstance(val, (list, tuple)):
        out: list[tuple[str, sympy.Expr]] = []
        for i, item in enumerate(val):
            out += [(access.replace("{}", f"{{}}[{i}]", 1), expr) for access, expr in _exposed(item)]
        return out
    return []


def _last_uses(order: list[torch.fx.Node], deps: dict[torch.fx.Node, list[torch.fx.Node]]) -> dict[torch.fx.Node, list[torch.fx.Node]]:
    """node -> the values whose last reader it is (outputs are never freed)."""
    position = {node: i for i, node in enumerate(order)}
    last = {dep: node for node in order for dep in deps[node]}  # the last reader's assignment stays
    result: dict[torch.fx.Node, list[torch.fx.Node]] = {}
    for value in sorted(last, key=position.__getitem__):
        if last[value].op != "output":
            result.setdefault(last[value], []).append(value)
    return result

