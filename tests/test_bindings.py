"""Option `eager_bindings` (xpu_lite/codegen/bindings.py): each binding dispatches exactly what
its overload's own call does, for the argument kinds fallbacks pass; compiled models that call
bindings stay bitwise equal to eager; the option is off by default and validated."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

import xpu_lite
from xpu_lite.codegen.bindings import _UNARY, BINDINGS, binding_for
from xpu_lite.config import parse_config

from .conftest import assert_bitwise

aten = torch.ops.aten


class _Record(TorchDispatchMode):
    """Every op that reaches the Python dispatch key, with its arguments' descriptions."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        describe = torch.utils._pytree.tree_map(_describe, (args, kwargs))
        self.calls.append((str(func), describe))
        return func(*args, **kwargs)


def _describe(value: object) -> object:
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), tuple(value.stride()), value.storage_offset(), value.dtype)
    return (type(value).__name__, repr(value))


def _samples(name: str) -> list[tuple[tuple, dict]]:
    """Fresh arguments of the kinds fallbacks pass to `name` (tensors, Python numbers, int lists,
    keywords); made anew for each call, so in-place overloads see the same inputs."""
    x, y = torch.randn(2, 3, 4), torch.randn(2, 3, 4)
    m, v = torch.randn(3, 4), torch.randn(4)
    ints = torch.arange(24).reshape(2, 3, 4)
    scalar = torch.tensor(1.5)
    op = name.split(".")[1]
    base = op.rstrip("_")
    cpu = {"device": torch.device("cpu"), "pin_memory": False}
    if base in _UNARY or base == "silu":
        return [((x,), {}), ((x.transpose(0, 2),), {})]
    if base in ("eq", "ne", "lt", "gt", "le", "ge"):
        others = [y, y[0], scalar, ints] if name.endswith("Tensor") else [0, 0.5, -2]
        return [((x, other), {}) for other in others] + [((ints, 1), {})] * name.endswith("Scalar")
    if base in ("maximum", "minimum"):
        return [((x, y), {}), ((x, y[0]), {}), ((ints, x), {})]
    if base in ("add", "sub", "mul", "div"):
        cases = [((x, y), {}), ((x, 0.5), {}), ((x, 2), {}), ((x, scalar), {}), ((x, y[0]), {})]
        if base in ("add", "sub"):
            cases += [((x, y), {"alpha": 2}), ((x, y), {"alpha": 0.5})]
        if not op.endswith("_"):
            cases += [((ints, 2), {}), ((ints, 0.5), {}), ((ints, ints), {})]
        return cases
    if base == "gelu":
        return [((x,), {}), ((x,), {"approximate": "tanh"})]
    return {
        "view": [((x, [6, 4]), {}), ((x, [-1]), {})],
        "permute": [((x, [2, 0, 1]), {})],
        "select": [((x, 1, 2), {}), ((x, -1, 0), {}), ((x, 0, -1), {})],
        "transpose": [((x, 0, -1), {}), ((x, 1, 2), {})],
        "unsqueeze": [((x, 1), {}), ((x, -1), {})],
        "squeeze": [((torch.randn(2, 1, 3), 1), {})],
        "expand": [((torch.randn(3, 1), [3, 4]), {}), ((v, [2, 4]), {})],
        "t": [((m,), {})],
        "clone": [((x,), {}), ((x.transpose(0, 1),), {"memory_format": torch.contiguous_format})],
        "linear": [((x, torch.randn(5, 4), torch.randn(5)), {}), ((x, torch.randn(5, 4)), {}), ((m, torch.randn(5, 4), torch.randn(5)), {})],
        "matmul": [((x, torch.randn(4, 5)), {}), ((v, v), {}), ((x, torch.randn(2, 4, 5)), {}), ((m, v), {})],
        "mm": [((m, torch.randn(4, 2)), {})],
        "bmm": [((x, torch.randn(2, 4, 5)), {})],
        "addmm": [((torch.randn(5), m, torch.randn(4, 5)), {}), ((torch.randn(5), m, torch.randn(4, 5)), {"beta": 0.5, "alpha": 2})],
        "layer_norm": [((x, [4], v, torch.randn(4)), {}), ((x, [3, 4]), {}), ((x, [4], None, None, 1e-3), {})],
        "softmax": [((x, -1), {}), ((x, 1, torch.float64), {})],
        "log_softmax": [((x, -1), {}), ((x, 1, torch.float64), {})],
        "_softmax": [((x, -1, False), {}), ((x, 0, False), {})],
        "_log_softmax": [((x, -1, False), {}), ((x, 0, False), {})],
        "native_layer_norm": [((x, [4], v, torch.randn(4), 1e-5), {}), ((x, [3, 4], None, None, 1e-3), {})],
        "scaled_dot_product_attention": [((x, y, torch.randn(2, 3, 4)), {}),
                                         ((x, y, x, torch.randn(3, 3)), {}),
                                         ((x, y, x, None, 0.0, True), {}),
                                         ((x, y, x), {"scale": 0.5})],
        "embedding": [((torch.randn(5, 4), torch.tensor([[0, 4], [2, 2]])), {}),
                      ((torch.randn(5, 4), torch.tensor([1, 0, 3]), 0), {})],
        "detach": [((x,), {})],
        "unbind": [((x,), {}), ((x, 1), {}), ((x, -1), {})],
        "cat": [(([x, y],), {}), (([x, y], 1), {}), (([x, y[:, :1]], -2), {}), (([ints, ints],), {})],
        "gather": [((x, 2, torch.randint(0, 4, (2, 3, 2))), {}), ((x, -1, torch.randint(0, 4, (2, 3, 2))), {})],
        "index_select": [((x, 1, torch.tensor([2, 0])), {}), ((x, -1, torch.tensor([3])), {})],
        "slice_scatter": [((x, y[:, 1:], 1, 1, 3, 1), {}), ((x, y[..., ::2], 2, 0, 9223372036854775807, 2), {})],
        "where": [((x > 0, x, y), {}), ((x > 0, x, scalar), {}), ((x > 0, ints, x), {})],
        "sum": [((x, [1]), {}), ((x, [0, 2], True), {}), ((ints, [-1]), {}), ((x, [1]), {"dtype": torch.float64}),
                ((x, None), {}), ((x, []), {})],
        "mean": [((x, [1]), {}), ((x, [-1], True), {}), ((x, [1], False), {"dtype": torch.float64}), ((x, None), {})],
        "amax": [((x, [1]), {}), ((x, [-1], True), {}), ((ints, [0, 1]), {})],
        "cumsum": [((x, 1), {}), ((ints, -1), {}), ((x, 0), {"dtype": torch.float64})],
        "pow": [((x, 2), {}), ((x, 0.5), {}), ((x, -1), {}), ((ints, 2), {}), ((ints, 0.5), {})],
        "clamp": [((x, -1, 1), {}), ((x, 0.5), {}), ((x, None, 0.5), {}), ((ints, 2, 5), {})],
        "masked_fill": [((x, x > 0, 1.5), {}), ((ints, ints > 5, 0), {}), ((x, x > 0, 2), {})],
        "arange": [((5,), cpu), ((7,), {"dtype": torch.float32, **cpu}), ((2.5,), cpu)],
        "ones": [(([2, 3],), cpu), (([4],), {"dtype": torch.int32, **cpu})],
        "zeros": [(([2, 3],), cpu), (([4],), {"dtype": torch.float64, "layout": torch.strided, **cpu})],
        "full": [(([2, 3], 0.5), cpu), (([2], 3), cpu), (([2], True), cpu), (([2], 3), {"dtype": torch.float32, **cpu})],
    }[base]


def _binding(name: str):
    obj = torch
    for part in BINDINGS[name].split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def _overload(name: str) -> torch._ops.OpOverload:
    _, op, overload = name.split(".")
    return getattr(getattr(aten, op), overload)


@pytest.mark.parametrize("name", sorted(BINDINGS))
def test_each_binding_dispatches_what_its_overload_does(name: str) -> None:
    overload, binding = _overload(name), _binding(name)
    assert binding_for(overload) == BINDINGS[name]
    for k, (args, kwargs) in enumerate(_samples(name)):
        records = []
        results = []
        for fn in (overload, binding):
            torch.manual_seed(0)
            fresh = torch.utils._pytree.tree_map(lambda t: t.clone() if isinstance(t, torch.Tensor) else t, (args, kwargs))
            with _Record() as record:
                results.append(fn(*fresh[0], **fresh[1]))
            records.append(record.calls)
        assert records[0] == records[1], (name, k, records)
        assert records[0], (name, k)  # something was dispatched
        assert_bitwise(results[1], results[0])


def _block(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    h = F.layer_norm(x, (8,))
    q = F.linear(h, w, b).view(x.shape[0], x.shape[1], 2, 4).transpose(1, 2)
    a = torch.softmax(q @ q.transpose(-2, -1) * 0.5, -1) @ q
    h = a.transpose(1, 2).reshape(x.shape)
    return x + torch.sigmoid(h) * F.gelu(h) - 0.1


def test_compiled_with_bindings_is_eager_bitwise(device: str) -> None:
    w, b = torch.randn(8, 8, device=device), torch.randn(8, device=device)
    compiled = torch.compile(_block, backend="xpu_lite", options={"mode": "lite", "eager_bindings": True}, dynamic=True)
    for batch, seq in ((2, 3), (3, 5), (4, 7)):
        x = torch.randn(batch, seq, 8, device=device)
        result, sources = xpu_lite.run_and_get_code(compiled, x, w, b)
        source = sources[0] if batch == 2 else source
        assert_bitwise(result, _block(x, w, b))
    assert xpu_lite.counters.forward_graphs == 1
    assert "torch.matmul(" in source and "torch._C._nn.linear(" in source and "torch.Tensor.view(" in source, source
    assert "[aten.matmul.default]" in source  # each line still names its overload
    calls = [line for line in source.splitlines() if "= torch." in line and "torch.empty" not in line]
    boxed = [line for line in calls if "torch.ops.aten." in line]
    assert all("_unsafe_view" in line for line in boxed), boxed  # no binding for it: the overload


def _mixed(x: torch.Tensor, idx: torch.Tensor, table: torch.Tensor) -> tuple[torch.Tensor, ...]:
    ones = torch.ones(x.shape[0], x.shape[1], device=x.device)
    joined = torch.cat([x, ones.unsqueeze(-1).expand(-1, -1, x.shape[2])], dim=1)
    pooled = joined.sum(dim=[1], keepdim=True) + joined.mean(-1, keepdim=True)
    kept = torch.where(x > 0, x, torch.full_like(x, 0.5)) + x.pow(2) + x.clamp(-1, 1) + x.masked_fill(x < 0, 1.5)
    rows = torch.gather(x, 2, idx) + torch.maximum(x, kept) + F.silu(x) + torch.arange(x.shape[2], device=x.device)
    rows = rows + x.cumsum(1) + x.amax(-1, keepdim=True)
    attn = F.scaled_dot_product_attention(x, x, x, is_causal=True)
    first, *_ = x.unbind(-1)  # over the static dim: unbinding a dynamic one specializes it
    return pooled, kept, rows, attn, first, F.embedding(idx[0], table)


def test_compiled_gathers_reductions_factories_with_bindings(device: str) -> None:
    compiled = torch.compile(_mixed, backend="xpu_lite", options={"mode": "lite", "eager_bindings": True}, dynamic=True)
    table = torch.randn(4, 6, device=device)
    for batch, seq in ((2, 3), (3, 5), (4, 7)):
        x = torch.randn(batch, seq, 4, device=device)
        idx = torch.randint(0, 4, (batch, seq, 4), device=device)
        result, sources = xpu_lite.run_and_get_code(compiled, x, idx, table)
        source = sources[0] if batch == 2 else source
        assert_bitwise(result, _mixed(x, idx, table))
    assert xpu_lite.counters.forward_graphs == 1
    for call in ("torch.cat(", "torch.sum(", "torch.gather(", "torch.embedding(", "torch.unbind(", "torch.arange(",
                 "torch._C._nn.scaled_dot_product_attention(", "torch.masked_fill("):
        assert call in source, (call, source)


def test_bindings_are_off_by_default_and_explained() -> None:
    x, w, b = torch.randn(2, 3, 8), torch.randn(8, 8), torch.randn(8)
    report = xpu_lite.explain(_block, x, w, b, mode="lite")
    assert "called as" not in str(report)
    report = xpu_lite.explain(_block, x, w, b, options={"mode": "lite", "eager_bindings": True})
    assert "called as torch.matmul" in str(report)


def test_eager_bindings_must_be_a_bool() -> None:
    assert parse_config("lite").eager_bindings is False
    assert parse_config(options={"eager_bindings": True}).eager_bindings is True
    with pytest.raises(TypeError, match="'eager_bindings' must be a bool"):
        parse_config(options={"eager_bindings": "yes"})
