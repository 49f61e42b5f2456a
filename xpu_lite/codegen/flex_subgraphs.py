"""score_mod and mask_mod subgraphs of flex attention as Triton statements, for the flex
attention kernel (codegen/flex_attention.py): each aten op of the traced subgraph as the
math table's expression, in the dtype eager's math computes it in; what cannot be inlined
raises NotTranslated with the reason."""
from __future__ import annotations

import functools
import math
import operator
from typing import Any

import torch
import torch.fx

from .. import _torch_compat as compat
from ..lowering.powers import POW_SPECIAL
from .mathfns import Steps
from .triton import SIGNATURE_DTYPE, TL_DTYPE, literal, math_table, math_text

aten = torch.ops.aten

_ROUNDING = ("floor", "ceil", "trunc", "round")  # of an int: the int itself, as eager's
# aten op of a score_mod / mask_mod subgraph -> the math table's entry
_MATH = {
    aten.add.Tensor: "add", aten.sub.Tensor: "sub", aten.mul.Tensor: "mul", aten.div.Tensor: "truediv",
    aten.abs.default: "abs", aten.exp.default: "exp", aten.log.default: "log", aten.tanh.default: "tanh",
    aten.sigmoid.default: "sigmoid", aten.sqrt.default: "sqrt", aten.rsqrt.default: "rsqrt",
    aten.maximum.default: "maximum", aten.minimum.default: "minimum", aten.where.self: "where",
    aten.logical_and.default: "logical_and", aten.logical_or.default: "logical_or",
    aten.logical_not.default: "logical_not", aten.bitwise_and.Tensor: "bitwise_and", aten.bitwise_or.Tensor: "bitwise_or",
    **{getattr(aten, cmp).Tensor: cmp for cmp in ("eq", "ne", "lt", "le", "gt", "ge")},
    **{getattr(aten, cmp).Scalar: cmp for cmp in ("eq", "ne", "lt", "le", "gt", "ge")},
    # float functions (of the score, or of indices: an int operand widened to float32 first)
    **{getattr(aten, fn).default: fn for fn in (
        "exp2", "expm1", "log2", "log10", "log1p", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
        "acosh", "atanh", "erf", "erfc", "erfinv", "lgamma", "digamma", "reciprocal", "silu")},
    **{getattr(aten, fn).default: fn for fn in _ROUNDING},
    aten.relu.default: "relu", aten.sign.default: "sign", aten.isnan.default: "isnan", aten.isinf.default: "isinf",
    aten.bitwise_xor.Tensor: "bitwise_xor", aten.bitwise_not.default: "bitwise_not",
    aten.atan2.default: "atan2",
}
_POWERS = (aten.pow.Tensor_Scalar, aten.pow.Tensor_Tensor, aten.pow.Scalar)
_CASTS = (aten._to_copy.default, torch.ops.prims.convert_element_type.default)
_INT_OPERATORS = {operator.add: "({0} + {1})", operator.sub: "({0} - {1})", operator.mul: "({0} * {1})",
                  operator.neg: "(-{0})"}
_IDENTITIES = (aten.lift_fresh_copy.default, aten.detach.default, aten.alias.default, aten.clone.default)


class NotTranslated(Exception):
    """A subgraph the kernel cannot inline: why."""


def buffer_kind(value: Any) -> tuple[str, torch.dtype | None, int]:
    """('tensor', dtype, ndim) or ('int', None, 0) of an argument score_mod or mask_mod reads."""
    val = value.meta.get("val") if isinstance(value, torch.fx.Node) else value
    if isinstance(val, torch.Tensor) and val.dtype in SIGNATURE_DTYPE and val.layout is torch.strided:
        return "tensor", val.dtype, val.dim()
    if isinstance(val, (int, torch.SymInt)):
        return "int", None, 0
    raise NotTranslated(f"a captured {type(val).__name__} ({getattr(val, 'dtype', '')}) the kernel cannot read")


class Translator:
    """A score_mod or mask_mod subgraph as Triton statements over the kernel's names: `qk`
    (the scores, float32, [BLOCK_M, BLOCK_N]), `b` and `h` (this program's batch and head),
    `m` ([BLOCK_M, 1]) and `n` ([1, BLOCK_N]), each captured buffer `bufJ`. Every value is
    computed in float32 where eager's is a float (a half-precision one rounded to its dtype
    after each op, as eager rounds it), in its own dtype otherwise."""

    def __init__(self, prefix: str, names: list[str], buffers: list[tuple[str, Any, int]], target: str,
                 offset: int = 0) -> None:
        self.prefix, self.names, self.buffers, self.offset = prefix, names, buffers, offset
        self.table, self.lines, self.indexes = math_table(target), [], False

    def run(self, sub: torch.fx.GraphModule, device: torch.device) -> tuple[list[str], str]:
        env: dict[torch.fx.Node, str] = {}
        placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(self.names):
            raise NotTranslated(f"a subgraph of {len(placeholders)} arguments, where {len(self.names)} were passed")
        env.update(zip(placeholders, self.names))
        self.dtypes = _eager_dtypes(sub, self.names[0] == "qk", self.buffers, device)
        for node in sub.graph.nodes:
            if node.op == "output":
                (result,) = node.args[0] if isinstance(node.args[0], (tuple, list)) else (node.args[0],)
                return self.lines, self._operand(result, env)
            if node.op == "call_function":
                env[node] = self._emit(node, env)
            elif node.op == "get_attr":
                env[node] = self._constant(node, sub)
            elif node.op != "placeholder":
                raise NotTranslated(f"its subgraph has a {node.op} node ({node.target})")
        raise NotTranslated("its subgraph has no output")

    def _emit(self, node: torch.fx.Node, env: dict[torch.fx.Node, str]) -> str:
        if node.target in _INT_OPERATORS and all(isinstance(a, (int, torch.fx.Node)) for a in node.args):
            return self._int_arith(node, env)
        dtype = self.dtypes.get(node)
        if dtype not in TL_DTYPE:
            raise NotTranslated(f"{node.target} gives a {dtype} value")
        name = f"{self.prefix}{len(self.lines)}"
        target = node.target
        if target in (aten.scalar_tensor.default, aten.full.default, aten.full_like.default):  # zeros_like(score) too
            value = node.args[0] if target is aten.scalar_tensor.default else node.args[1]
            expr = f"tl.full([1, 1], {_scalar(value)}, {TL_DTYPE[_computed(dtype)]})"
        elif target in _CASTS:
            expr = f"{self._operand(node.args[0], env)}.to({TL_DTYPE[_computed(dtype)]})"
        elif target in _IDENTITIES:  # a constant's fresh copy and its detach: the value itself
            expr = self._operand(node.args[0], env)
        elif target is aten.index.Tensor:
            expr = self._index(node, env)
        elif target in _POWERS and not node.kwargs:
            expr = self._pow(name, node, env, dtype)
        elif (target in _MATH or target is aten.neg.default) and not node.kwargs:
            entry = _MATH.get(target) or ("fneg" if dtype.is_floating_point else "neg")
            entry = "identity" if entry in _ROUNDING and not dtype.is_floating_point else entry
            expr = self._math(name, entry, [self._operand(a, env) for a in node.args], node.args, dtype,
                              target is aten.where.self)
        elif target is aten.clamp.default and not node.kwargs:  # clamp(x, min, max): either bound may be None
            expr = self._operand(node.args[0], env)
            for bound, entry in zip(node.args[1:], ("clamp_min", "clamp_max")):
                if bound is not None:
                    expr = self._math(f"{name}_{entry}", entry, [expr, self._operand(bound, env)], (node.args[0], bound), dtype)
        elif (entry := _by_literal(node, dtype)) is not None:  # x // 8, x % 3 of indices
            expr = self._math(name, entry, [self._operand(a, env) for a in node.args[:2]], node.args[:2], dtype)
        else:
            raise NotTranslated(f"its subgraph calls {target}, which the flex attention kernel does not inline")
        if dtype in (torch.float16, torch.bfloat16):  # eager's value is rounded to its dtype after each op
            expr = self.table[f"round_{str(dtype).removeprefix('torch.')}"].format(f"({expr}).to(tl.float32)")
        elif dtype is torch.bool:
            expr = f"(({expr}) != 0)"
        else:
            expr = f"({expr}).to({TL_DTYPE[dtype]})"
        return self._assign(expr, node.target, name)

    def _assign(self, expr: str, what: Any, name: str | None = None) -> str:
        """`name = expr  # what` appended (name: the next free one), and the name."""
        name = name or f"{self.prefix}{len(self.lines)}"
        self.lines.append(f"{name} = {expr}  # {what}")
        return name

    def _math(self, name: str, entry_name: str, args: list[str], values: Any, dtype: torch.dtype, where: bool = False) -> str:
        """The math table's `entry_name` of `args` (its steps appended to the lines), in
        float32 where the result is a float (q_idx / 2: int operands widened first)."""
        if dtype.is_floating_point:
            args = [f"{a}.to(tl.float32)" if isinstance(v, torch.fx.Node) and i >= where else a
                    for i, (a, v) in enumerate(zip(args, values))]
        if dtype.is_floating_point and isinstance(self.table[entry_name], Steps):
            # its steps may read an operand's bits, which a scalar (a literal, or of b and h) has not: a [1, 1] block
            args = [f"({a} * tl.full([1, 1], 1.0, tl.float32))" if isinstance(v, torch.fx.Node)
                    else f"tl.full([1, 1], {a}, tl.float32)" for a, v in zip(args, values)]
        steps, text = math_text(entry_name, args, _computed(dtype), self.table, name)
        self.lines += steps
        return text

    def _pow(self, name: str, node: torch.fx.Node, env: dict[torch.fx.Node, str], dtype: torch.dtype) -> str:
        """x ** y: eager's exact forms for a literal exponent 2, 0.5, -0.5, -1, 1 or 0
        (powers.POW_SPECIAL), the composition otherwise (a float's); of an int, only
        those exact forms that stay ints."""
        x, exponent = node.args
        literal_exponent = isinstance(exponent, (int, float)) and not isinstance(exponent, bool)
        entry = POW_SPECIAL.get(exponent) if literal_exponent else None
        if not dtype.is_floating_point and entry not in ("square", "identity", "one"):
            raise NotTranslated(f"an integer power {exponent if literal_exponent else 'of a tensor'} "
                                "(of ints, squares are inlined)")
        if entry is not None:
            return self._math(name, entry, [self._operand(x, env)], (x,), dtype)
        return self._math(name, "pow", [self._operand(x, env), self._operand(exponent, env)], node.args, dtype)

    def _whole(self, name: str, dtype: torch.dtype, ndim: int) -> str:
        """A captured tensor read as a value (`score * temperature`): its element, if 0-dim."""
        if ndim:
            raise NotTranslated(f"it reads a captured {ndim}-dim tensor whole (an element of it, `t[h]`, is inlined)")
        loaded = f"tl.load({name})"
        return _widened(loaded, dtype)

    def _index(self, node: torch.fx.Node, env: dict[torch.fx.Node, str]) -> str:
        source, indices = node.args
        j = self._captured(env.get(source))
        if j is None or self.buffers[j][0] != "tensor" or any(i is None for i in indices) or len(indices) != self.buffers[j][2]:
            raise NotTranslated("it indexes something other than one element of a captured tensor")
        buf, offsets = f"buf{j + self.offset}", []
        for d, index in enumerate(indices):
            i = self._operand(index, env)
            wrapped = f"tl.where({i} < 0, {i} + {buf}_size{d}, {i})"  # a negative index counts from the end
            self.lines.append(f"tl.device_assert(((({wrapped}) >= 0) & (({wrapped}) < {buf}_size{d})) | (valid == 0), "
                              f"\"index out of bounds: {node.target} of a captured tensor\")")
            offsets.append(f"({wrapped}).to(tl.int64) * {buf}_stride{d}")
        self.indexes = True
        # a block of `valid`'s shape: the offsets may be of fewer dims (lengths[b]: a scalar), the mask not
        loaded = f"tl.load({buf} + {' + '.join(offsets)} + valid.to(tl.int64) * 0, mask=valid, other=0)"
        dtype = self.buffers[j][1]
        return _widened(loaded, dtype)

    def _int_arith(self, node: torch.fx.Node, env: dict[torch.fx.Node, str]) -> str:
        """Python int arithmetic of captured ints (a sequence length, `k.shape[2] - 3`)."""
        if any(isinstance(a, torch.fx.Node) and not isinstance(a.meta.get("val"), (int, torch.SymInt)) for a in node.args):
            raise NotTranslated(f"{node.target.__name__} of something other than ints")
        args = [self._operand(a, env) for a in node.args]
        return self._assign(_INT_OPERATORS[node.target].format(*args), node.target.__name__)

    def _constant(self, node: torch.fx.Node, sub: torch.fx.GraphModule) -> str:
        """A 0-dim tensor the subgraph holds (an int index beside a tensor one, `bias[h, 0]`,
        becomes one) as a literal."""
        value = functools.reduce(getattr, node.target.split("."), sub)
        if not isinstance(value, torch.Tensor) or value.dim() != 0 or value.dtype not in TL_DTYPE:
            raise NotTranslated(f"its subgraph holds a constant {type(value).__name__} "
                                f"{tuple(getattr(value, 'shape', ()))} {getattr(value, 'dtype', '')}, not a 0-dim number")
        with compat.real_tensors():  # a compile traces under a FakeTensorMode
            number = value.item()
        return self._assign(f"tl.full([1, 1], {_scalar(number)}, {TL_DTYPE[_computed(value.dtype)]})", node.target)

    def _captured(self, name: str | None) -> int | None:
        """The position among the captured buffers of the one named `name` (their names come
        last), or None."""
        first = len(self.names) - len(self.buffers)
        return self.names.index(name) - first if name in self.names[first:] else None

    def _operand(self, value: Any, env: dict[torch.fx.Node, str]) -> str:
        if isinstance(value, torch.fx.Node):
            name = env[value]
            if (j := self._captured(name)) is not None and self.buffers[j][0] == "tensor":
                return self._whole(name, *self.buffers[j][1:])
            return name
        if isinstance(value, (bool, int, float)):
            return _scalar(value)
        raise NotTranslated(f"an argument {value!r} the kernel cannot inline")


def _eager_dtypes(sub: torch.fx.GraphModule, scores: bool, buffers: list[tuple[str, Any, int]],
                  device: torch.device) -> dict[torch.fx.Node, torch.dtype]:
    """Each node's dtype as eager's math computes it: the subgraph was traced with the
    query's dtype for the score and int32 indices, but eager calls it with float32 scores
    and int64 indices (torch.arange), so a bfloat16 query's scores are never rounded to
    bfloat16 there. Found by running the subgraph once on 0-dim ones of those dtypes."""
    class Recorder(torch.fx.Interpreter):
        def run_node(self, node: torch.fx.Node) -> Any:
            result = super().run_node(node)
            if isinstance(result, torch.Tensor):
                found[node] = result.dtype
            return result

    found: dict[torch.fx.Node, torch.dtype] = {}
    one = lambda dtype: torch.ones((), dtype=dtype, device=device)  # noqa: E731
    args = [one(torch.float32)] if scores else []
    args += [one(torch.int64) for _ in range(4)]
    args += [torch.ones([2] * ndim, dtype=dtype, device=device) if kind == "tensor" else 1 for kind, dtype, ndim in buffers]
    try:
        with torch.no_grad():
            Recorder(sub).run(*args)
    except Exception as exc:  # noqa: BLE001  (a subgraph eager's math could not run either way: not inlined)
        raise NotTranslated(f"its subgraph did not run on sample values ({type(exc).__name__}: {exc})") from None
    return found


def _by_literal(node: torch.fx.Node, dtype: torch.dtype) -> str | None:
    """The math entry of an integer floor division or remainder by a nonzero int literal
    (a chunked mask's `q_idx // 128`; by a tensor it may be 0, which eager raises on), or
    of a float remainder; None for anything else."""
    target, args = node.target, node.args
    if target is aten.div.Tensor_mode and node.kwargs.get("rounding_mode") == "floor":
        target = aten.floor_divide.default
    elif node.kwargs or len(args) != 2:
        return None
    divisor_ok = isinstance(args[1], int) and not isinstance(args[1], bool) and args[1] != 0
    if target is aten.floor_divide.default and not dtype.is_floating_point and divisor_ok:
        return "div_floor_int"
    if target in (aten.remainder.Scalar, aten.remainder.Tensor):
        return "remainder" if dtype.is_floating_point else ("remainder_int" if divisor_ok else None)
    return None


def _scalar(value: bool | int | float) -> str:
    """A Python number as the kernel's literal (a float as its float32 value, a wrapped
    number as in aten: it does not widen a tensor's dtype)."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, float):
        return literal(value, torch.float32) if math.isfinite(value) else f"float('{value}')"
    return repr(value)


def _widened(loaded: str, dtype: torch.dtype) -> str:
    """A value loaded from a captured tensor, as the kernel computes with it: a half one in float32."""
    return f"{loaded}.to(tl.float32)" if dtype in (torch.float16, torch.bfloat16) else loaded


def _computed(dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
