"""Eager fallbacks that write into a dead input (xpu_lite/codegen/inplace.py): the table is
checked against torch's own operator definitions, the planner's conditions one by one on
FX graphs (no Dynamo, no device), and compiled models stay bitwise equal to eager, their
inputs untouched, on every device."""
from __future__ import annotations

import os

import pytest
import torch
import torch.nn.functional as F
import torchgen
from torch.fx.experimental.proxy_tensor import make_fx
from torch.testing._internal.common_methods_invocations import op_db

import xpu_lite
from xpu_lite.codegen import plan_inplace
from xpu_lite.codegen.inplace import STRUCTURED_FRESH, STRUCTURED_INPLACE, _op, _same_buffer
from xpu_lite.config import parse_config
from xpu_lite.decomp import build_plan
from xpu_lite.lowering import partition

from .conftest import assert_bitwise

aten = torch.ops.aten


def _native_functions() -> dict[str, dict]:
    yaml = pytest.importorskip("yaml", reason="PyYAML reads torch's native_functions.yaml")
    path = os.path.join(os.path.dirname(torchgen.__file__), "packaged", "ATen", "native", "native_functions.yaml")
    with open(path) as fh:
        entries = yaml.load(fh, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return {e["func"].split("(")[0]: e for e in entries}


def _tags(entry: dict) -> list[str]:
    tags = entry.get("tags", [])
    return [tags] if isinstance(tags, str) else tags


def test_every_pair_shares_one_structured_kernel() -> None:
    functions = _native_functions()
    for functional, inplace in STRUCTURED_INPLACE:
        f, i = functions[functional], functions[inplace]
        assert f.get("structured_delegate"), f"{functional} is not structured"
        assert f["structured_delegate"] == i.get("structured_delegate"), (functional, inplace)
        assert "pointwise" in _tags(f), f"{functional} is not pointwise"
        fs, is_ = _op(functional)._schema, _op(inplace)._schema
        assert [(a.name, str(a.type)) for a in fs.arguments] == [(a.name, str(a.type)) for a in is_.arguments]
        assert is_.arguments[0].alias_info is not None and is_.arguments[0].alias_info.is_write
    for name in STRUCTURED_FRESH:
        assert functions[name].get("structured_delegate"), f"{name} is not structured"
        assert not _op(name)._schema.is_mutable


def test_the_table_misses_no_structured_pointwise_pair() -> None:
    functions = _native_functions()
    listed = {f for f, _ in STRUCTURED_INPLACE}
    missing = []
    for name, entry in functions.items():
        delegate = entry.get("structured_delegate")
        base = name.partition(".")[0]
        if not delegate or "pointwise" not in _tags(entry) or base.endswith("_"):
            continue
        pairs = [n for n, e in functions.items() if n.partition(".")[0] == base + "_" and e.get("structured_delegate") == delegate]
        if pairs and name not in listed:
            missing.append(name)
    assert not missing, f"structured pointwise ops with an in-place twin not in STRUCTURED_INPLACE: {missing}"


def _plan(fn, *args, device_type: str = "cpu") -> tuple[torch.fx.GraphModule, dict[str, torch._ops.OpOverload]]:
    gm = make_fx(fn, tracing_mode="symbolic")(*args)
    decisions = partition(gm, build_plan(parse_config("lite")), device_type)
    return gm, plan_inplace(gm, decisions, device_type)


def _planned(plan: dict[str, torch._ops.OpOverload]) -> list[str]:
    return sorted(str(op) for op in plan.values())


def test_a_chain_reuses_every_dead_intermediate() -> None:
    def chain(x):
        y = aten.sin.default(x)  # reads the input: allocates
        y = aten.mul.Tensor(y, 2.0)
        y = aten.relu.default(y)
        return aten.pow.Tensor_Scalar(y, 2)

    _, plan = _plan(chain, torch.randn(4, 6))
    assert _planned(plan) == ["aten.mul_.Tensor", "aten.pow_.Scalar", "aten.relu_.default"]


@pytest.mark.parametrize(
    "case",
    [
        "input", "read_again", "alias_read_later", "composite_alias_read_later", "alias_returned", "output", "broadcast", "promotion", "composite_producer",
        "view_alive", "twice", "zerotensor",
    ],
)
def test_nothing_observable_is_overwritten(case: str) -> None:
    x, row = torch.randn(4, 6), torch.randn(1, 6)

    def fn(x, row):
        y = aten.sin.default(x)
        if case == "input":
            return aten.mul.Tensor(x, 2.0)  # x is the caller's
        if case == "read_again":
            return aten.mul.Tensor(y, 2.0), aten.sum.default(y)  # sum has no in-place twin
        if case == "alias_read_later":
            v = aten.view.default(y, [24])
            return aten.mul.Tensor(y, 2.0), aten.sum.default(v)
        if case == "composite_alias_read_later":
            same = aten.dropout.default(y, 0.5, False)  # y itself
            return aten.mul.Tensor(y, 2.0), aten.sum.default(same)
        if case == "alias_returned":
            v = aten.view.default(y, [24])
            return v, aten.mul.Tensor(y, 2.0)
        if case == "output":
            return y, aten.mul.Tensor(y, 2.0)
        if case == "broadcast":
            return aten.mul.Tensor(aten.sin.default(row), y)  # (1, 6) * (4, 6) -> (4, 6)
        if case == "promotion":
            return aten.mul.Tensor(aten.sin.default(x.half()), y)  # half * float -> float
        if case == "composite_producer":
            return aten.mul.Tensor(aten.dropout.default(x, 0.5, False), 2.0)  # dropout(train=False) is x
        if case == "view_alive":
            return aten.mul.Tensor(y, 2.0), aten.view.default(y, [24])
        if case == "twice":
            return aten.mul.Tensor(y, y)
        if case == "zerotensor":
            z = aten._efficientzerotensor.default([4, 6])
            return aten.mul.Tensor(aten.cos.default(y), 2.0), z
        raise AssertionError(case)

    _, plan = _plan(fn, x, row)
    assert plan == {}, f"{case}: {plan}"


def test_the_last_reader_takes_the_buffer() -> None:
    def fn(x):
        y = aten.sin.default(x)
        v = aten.view.default(y, [24])
        s = aten.sum.default(aten.cos.default(v))  # y's alias, read before the last reader
        n = aten.layer_norm.default(y, [6])  # a composite that allocates, on cpu
        return aten.mul.Tensor(y, 2.0), s, n

    gm, plan = _plan(fn, torch.randn(4, 6))
    assert {name: str(op) for name, op in plan.items()} == {"mul": "aten.mul_.Tensor"}


@pytest.mark.parametrize("producer", ["linear", "matmul", "softmax", "layer_norm"])
def test_composites_that_allocate_give_their_buffer(producer: str) -> None:
    x, w = torch.randn(4, 6), torch.randn(6, 6)

    def fn(x, w):
        if producer == "linear":
            y = aten.linear.default(x, w, aten.cos.default(w[0]))
        elif producer == "matmul":
            y = aten.matmul.default(x, w)
        elif producer == "softmax":
            y = aten.softmax.int(x, -1)
        else:
            y = aten.layer_norm.default(x, [6])
        return aten.mul.Tensor(y, 2.0)

    assert _planned(_plan(fn, x, w)[1]) == ["aten.mul_.Tensor"]
    expected_xpu = [] if producer == "layer_norm" else ["aten.mul_.Tensor"]  # torch-xpu-ops: unchecked
    assert _planned(_plan(fn, x, w, device_type="xpu")[1]) == expected_xpu


@pytest.mark.parametrize("shape", [(6,), (4, 6), (3, 4, 6), (2, 3, 4, 6)])
def test_fresh_composites_never_return_an_input_s_storage(shape: tuple[int, ...]) -> None:
    """Eager on cpu, each listed composite over 1- to 4-d inputs, contiguous or not: the result
    shares no storage with an input (the property the planner relies on)."""
    x = torch.randn(*shape)
    w = torch.randn(6, 6)
    inputs = {"contiguous": x, "transposed": x.transpose(0, -1).contiguous().transpose(0, -1)}
    for label, t in inputs.items():
        results = {
            "linear": torch.ops.aten.linear.default(t, w, w[0]),
            "linear (no bias)": torch.ops.aten.linear.default(t, w),
            "matmul": torch.ops.aten.matmul.default(t, w),
            "matmul (vector)": torch.ops.aten.matmul.default(t, w[0]),
            "softmax": torch.ops.aten.softmax.int(t, -1),
            "log_softmax": torch.ops.aten.log_softmax.int(t, -1, torch.float64),
            "layer_norm": torch.ops.aten.layer_norm.default(t, [6]),
        }
        storages = {t.untyped_storage().data_ptr(), w.untyped_storage().data_ptr()}
        for name, result in results.items():
            assert result.untyped_storage().data_ptr() not in storages, (name, label, shape)


def test_layout_must_be_the_out_of_place_result_s() -> None:
    assert _same_buffer(torch.empty(4, 6), torch.empty(4, 6))
    assert not _same_buffer(torch.empty(4, 6), torch.empty(6, 4).t())  # same sizes, other strides
    assert not _same_buffer(torch.empty(4, 6), torch.empty(4, 6, dtype=torch.float64))
    assert not _same_buffer(torch.empty(24)[1:], torch.empty(23))  # storage offset

    def fn(x):  # a transposed first operand sets eager's layout: its buffer takes the result
        return aten.add.Tensor(aten.sin.default(x.t()), aten.cos.default(x).t().contiguous())

    _, plan = _plan(fn, torch.randn(4, 6))
    assert _planned(plan) == ["aten.add_.Tensor"]


def test_relu_only_where_it_is_clamp_min() -> None:
    def fn(x):
        return aten.relu.default(aten.sin.default(x))

    assert _planned(_plan(fn, torch.randn(4, 6), device_type="cpu")[1]) == ["aten.relu_.default"]
    assert _plan(fn, torch.randn(4, 6), device_type="xpu")[1] == {}


def _pointwise(x):
    for i in range(3):
        x = torch.sin(x) * 1.01 + 0.1
        x = torch.relu(x) - 0.01 * i
        x = torch.clamp(F.gelu(x), -1.0, 1.0) / 3
    return x


def test_compiled_chain_is_eager_bitwise_and_reuses_buffers(device: str) -> None:
    compiled = torch.compile(_pointwise, backend="xpu_lite", mode="lite", dynamic=True)
    for n in (7, 33, 100):
        x = torch.randn(n, 5, device=device)
        x[0, :3] = torch.tensor([float("nan"), float("inf"), -0.0])
        before = x.clone()
        result, sources = xpu_lite.run_and_get_code(compiled, x)
        source = sources[0] if n == 7 else source  # one graph for every size
        assert_bitwise(result, _pointwise(x))
        assert result.stride() == _pointwise(x).stride()
        assert_bitwise(x, before)  # the input is the caller's
    assert xpu_lite.counters.forward_graphs == 1
    assert source.count("_.Tensor(") + source.count("_.default(") >= 14, source  # all but the first op
    assert "torch.ops.aten.sin.default(arg" in source  # the input itself is never written


class _Residual(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(8)
        self.up, self.down = torch.nn.Linear(8, 16), torch.nn.Linear(16, 8)

    def forward(self, x):
        for _ in range(2):
            h = self.up(self.norm(x))
            x = x + self.down(F.gelu(h) * torch.sigmoid(h))
        return torch.softmax(x @ x.transpose(-2, -1) * 0.5, -1)


def test_compiled_residual_stream_is_eager_bitwise_in_place(device: str) -> None:
    """Buffers read by earlier calls too (the residual stream, a linear output read by gelu
    then sigmoid) and composite results (linear, matmul) are written in place."""
    model = _Residual().to(device).eval()
    compiled = torch.compile(model, backend="xpu_lite", mode="lite", dynamic=True)
    with torch.no_grad():
        for batch in (2, 3, 5):
            x = torch.randn(batch, 4, 8, device=device)
            before = x.clone()
            result, sources = xpu_lite.run_and_get_code(compiled, x)
            source = sources[0] if batch == 2 else source
            assert_bitwise(result, model(x))
            assert_bitwise(x, before)
    assert xpu_lite.counters.forward_graphs == 1
    assert source.count("torch.ops.aten.sigmoid_.default(") == 2, source  # after gelu read the same buffer
    assert source.count("torch.ops.aten.add_.Tensor(") == 1, source  # the second residual add; the first reads x
    assert "torch.ops.aten.mul_.Tensor(" in source  # the matmul result scaled in place


def test_compiled_residual_stream_trains_as_eager(device: str) -> None:
    """The same model in training: what backward reads is saved (a graph output, never
    overwritten); loss, outputs and every parameter's gradient are eager's to the bit."""
    torch.manual_seed(0)
    model = _Residual().to(device)
    reference = _Residual().to(device)
    reference.load_state_dict(model.state_dict())
    compiled = torch.compile(model, backend="xpu_lite", mode="lite", dynamic=True)
    for batch in (2, 3, 5):
        x = torch.randn(batch, 4, 8, device=device)

        def step():
            out = compiled(x)
            out.square().sum().backward()
            return out

        result, sources = xpu_lite.run_and_get_code(step)
        if batch == 2:
            assert len(sources) == 2 and all("in place" in s for s in sources), sources
        expected = reference(x)
        expected.square().sum().backward()
        assert_bitwise(result, expected)
        for p, q in zip(model.parameters(), reference.parameters()):
            assert_bitwise(p.grad, q.grad)
            p.grad, q.grad = None, None
    assert xpu_lite.counters.forward_graphs == 1


def test_training_saves_what_backward_reads(device: str) -> None:
    def fn(x, w):
        h = torch.exp(x * w)  # exp's backward reads its result: saved, never overwritten
        return (torch.tanh(h) * 2 + 1).sum()

    compiled = torch.compile(fn, backend="xpu_lite", mode="lite", dynamic=True)
    for n in (3, 8):
        x = torch.randn(n, 4, device=device)
        w = torch.randn(4, device=device, requires_grad=True)
        w2 = w.detach().clone().requires_grad_(True)

        def step():
            out = compiled(x, w)
            out.backward()
            return out

        result, sources = xpu_lite.run_and_get_code(step)
        expected = fn(x, w2)
        expected.backward()
        assert_bitwise(result, expected)
        assert_bitwise(w.grad, w2.grad)
        if n == 3:
            assert len(sources) == 2 and "mul_.Tensor(" in sources[0] + sources[1], sources


def test_explain_names_the_in_place_calls() -> None:
    report = xpu_lite.explain(_pointwise, torch.randn(6, 5), mode="lite")
    notes = [reason for *_, reason in report.rows() if "runs in place as" in reason]
    assert len(notes) >= 14 and "runs in place as aten.mul_.Tensor" in str(report)
    assert all(reason.startswith("outside region") for reason in notes)


def test_reuse_buffers_false_calls_what_eager_traced(device: str) -> None:
    compiled = torch.compile(_pointwise, backend="xpu_lite", options={"mode": "lite", "reuse_buffers": False}, dynamic=True)
    x = torch.randn(9, 5, device=device)
    result, (source,) = xpu_lite.run_and_get_code(compiled, x)
    assert_bitwise(result, _pointwise(x))
    assert "_.Tensor(" not in source and "_.default(" not in source and "in place" not in source


_PAIRED = {f.partition(".")[0] for f, _ in STRUCTURED_INPLACE}
_OPS = [op for op in op_db if op.aten_name in _PAIRED and torch.float32 in op.supported_dtypes("cpu")]


@pytest.mark.parametrize("op", _OPS, ids=lambda op: op.name + (f".{op.variant_test_name}" if op.variant_test_name else ""))
def test_each_pair_is_eager_bitwise_in_place(op) -> None:
    """OpInfo samples with a fresh first input (-(-x): the same bits, a buffer of the
    wrapper's own): the in-place call is used exactly where eager's result has that
    buffer's dtype, sizes and strides, and the result is eager's to the bit."""

    def fn(x, *args, **kwargs):
        return op.op(torch.neg(torch.neg(x)), *args, **kwargs)

    used = 0
    for sample in list(op.sample_inputs("cpu", torch.float32))[:4]:
        if not isinstance(sample.input, torch.Tensor):
            continue
        try:
            expected = fn(sample.input, *sample.args, **sample.kwargs)
        except Exception:  # noqa: BLE001  (eager refuses the sample: nothing to compare)
            continue
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="xpu_lite", mode="lite")
        result, sources = xpu_lite.run_and_get_code(compiled, sample.input, *sample.args, **sample.kwargs)
        assert_bitwise(result, expected)
        buf = torch.neg(torch.neg(sample.input))
        fits = (expected.dtype, expected.shape, expected.stride()) == (buf.dtype, buf.shape, buf.stride())
        calls = [line for line in sources[-1].splitlines() if "torch.ops." in line]
        in_place = "(in place" in calls[-1]  # the sample's op: the last call, after the two negs
        assert in_place or not fits, f"{op.name}: the in-place call was not used where it fits\n{sources}"
        used += in_place
    if used == 0:
        pytest.skip("no sample's result fits its first input (broadcast, promotion or another dtype)")
