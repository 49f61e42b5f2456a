"""The generated wrapper as text and as a stage on its own (no device, no Dynamo)."""
from __future__ import annotations

import copy
import math
import random
import struct

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import xpu_lite
from xpu_lite.codegen import generate_wrapper
from xpu_lite.codegen.prims import HOST_FLOATS, host_cast
from xpu_lite.config import parse_config
from xpu_lite.decomp import build_plan
from xpu_lite.lowering import DecisionKind, partition
from xpu_lite.report import capture, peak_bytes
from xpu_lite.runtime import load_wrapper


def chain(x: torch.Tensor) -> torch.Tensor:
    n = x.shape[0]
    y = x.view(n * 2, -1).relu()
    return y * n


def body_lines(source: str) -> list[str]:
    lines = source.split("def call(args):\n", 1)[1].splitlines()
    return [line for line in lines if line.strip()]


def test_stage_pipeline_without_dynamo() -> None:
    gm = make_fx(chain, tracing_mode="symbolic")(torch.randn(4, 6))
    decisions = partition(gm, build_plan(parse_config("lite")), "cpu")
    code = generate_wrapper(gm, decisions, "stage", "cpu")
    assert "s" in code.source and ".size(0)" in code.source  # a size symbol bound from the input
    assert "torch.ops.aten.sym_size" not in code.source  # size arithmetic is plain Python
    call = load_wrapper(code)
    for n in (2, 5):
        x = torch.randn(n, 6)
        assert torch.equal(call([x])[0] if isinstance(call([x]), (tuple, list)) else call([x]), chain(x))


def test_source_is_deterministic_and_commented() -> None:
    sources = []
    for _ in range(2):
        torch._dynamo.reset()
        compiled = torch.compile(chain, backend="xpu_lite", mode="lite", dynamic=True)
        _, (source,) = xpu_lite.run_and_get_code(compiled, torch.randn(4, 6))
        sources.append(source.split("\n", 1)[1])  # first line names the graph number
    assert sources[0] == sources[1]
    for line in body_lines(sources[0]):
        assert "  # " in line or line.strip().startswith("raise "), f"line without a comment: {line!r}"
    assert "0x" not in sources[0]  # no ids or addresses


def test_no_dead_code_for_unused_sizes() -> None:
    def fn(x: torch.Tensor) -> torch.Tensor:
        unused = x.shape[0] * x.shape[1]  # noqa: F841
        return x.cos()

    compiled = torch.compile(fn, backend="xpu_lite", mode="lite", dynamic=True)
    _, (source,) = xpu_lite.run_and_get_code(compiled, torch.randn(4, 6))
    calls = [line for line in body_lines(source) if "torch.ops." in line]
    assert len(calls) == 1 and "aten.cos.default(" in calls[0]
    assert ".size(" not in source and "sym_size" not in source


_VALUE_CHECKS = {  # fn, inputs eager accepts, inputs eager refuses, eager's message
    "one_hot": (lambda labels: torch.nn.functional.one_hot(labels, 3).float() * 2,
                [[torch.tensor([0, 2, 1])], [torch.tensor([2, 2, 0, 1, 1])]],
                [[torch.tensor([0, 3])], [torch.tensor([-1, 0])]], "Class values must be"),
    "binary_cross_entropy": (lambda p, t: torch.nn.functional.binary_cross_entropy(p * 2, t),
                             [[torch.tensor([0.1, 0.4]), torch.tensor([1.0, 0.0])],
                              [torch.tensor([0.3, 0.2, 0.5]), torch.tensor([0.0, 1.0, 1.0])]],
                             [[torch.tensor([0.2, 0.7]), torch.tensor([1.0, 0.0])],
                              [torch.tensor([float("nan"), 0.1]), torch.tensor([1.0, 0.0])]],
                             "all elements of input should be between 0 and 1"),
}


@pytest.mark.parametrize("case", _VALUE_CHECKS)
def test_an_assert_on_tensor_values_is_kept(device: str, case: str) -> None:
    """What eager checks in a tensor's values, the default mode checks too, raising eager's
    error. one_hot's trace asserts that its classes are in range (`_assert_async`): before
    2026-11-28 dead-code elimination removed those asserts, and a class out of range gave a
    row of zeros. binary_cross_entropy's decomposition (torch._decomp's, Inductor's) did not
    check its input at all: out of [0, 1] it gave NaN or a finite loss; it asserts now.
    (Refused inputs on cpu only: on a GPU the assert is a device assert, which ends the
    context, as eager's cuda kernels assert there.)"""
    fn, good, bad, message = _VALUE_CHECKS[case]
    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for args in good:
            args = [a.to(device) for a in args]
            torch.testing.assert_close(compiled(*args), fn(*args))
    asserts = [(r, d) for r in reports for d in r.decisions if d.op == "aten._assert_async.msg"]
    assert asserts and all(d.node in r.emitted for r, d in asserts)
    assert all(d.why().startswith("data dependent: checks a tensor's values, raising eager's error") for _, d in asserts)
    if device == "cpu":
        for args in bad:
            with pytest.raises(RuntimeError, match=message):
                fn(*args)
            with pytest.raises(RuntimeError, match=message):
                compiled(*args)


def test_buffers_are_freed_after_last_use() -> None:
    def fn(x: torch.Tensor) -> torch.Tensor:
        return x.sin().cos().exp()

    compiled = torch.compile(fn, backend="xpu_lite", mode="lite")
    _, (source,) = xpu_lite.run_and_get_code(compiled, torch.randn(8))
    assert "del buf0" in source and "del buf1" in source


def test_input_tensors_are_freed_after_last_use(device: str) -> None:
    """A backward graph's inputs are the saved activations, which AOTAutograd hands over:
    the wrapper frees each after its last use, so a chain's weight gradients take the
    place of the activations the backward has consumed. Six 256x256 layers, a training
    step's peak: eager's 8 such tensors; lite mode's was 13 until 2026-11-29 (the inputs
    lived to the return), now eager's. An input only its sizes are read of is freed at once."""
    def fn(x: torch.Tensor, ws: list[torch.Tensor]) -> torch.Tensor:
        for w in ws:
            x = (x @ w).tanh()
        return x.sum()

    ws = [torch.randn(256, 256, device=device, requires_grad=True) for _ in range(6)]
    x = torch.randn(256, 256, device=device)
    peaks = []
    for f in (fn, torch.compile(fn, backend="xpu_lite", mode="lite", dynamic=True)):
        for _ in range(2):
            f(x, ws).backward()
        for w in ws:
            w.grad = None
        peaks.append(peak_bytes(lambda: f(x, ws).backward(), device))
        for w in ws:
            w.grad = None
    eager, lite = peaks
    assert lite <= eager, (eager, lite)

    gm = make_fx(lambda x, unused: x * 2, tracing_mode="symbolic")(torch.randn(4, 6), torch.randn(3))
    source = generate_wrapper(gm, partition(gm, build_plan(parse_config("lite")), "cpu"), "stage", "cpu").source
    assert "    del arg1  # nothing reads this input: freed now\n" in source, source


def test_prims_convert_element_type_is_aten_to_copy() -> None:
    """codegen/prims.py calls aten._to_copy for prims.convert_element_type: the same values,
    dtype, sizes and strides for every layout and dtype pair (or the same error)."""
    base = torch.randn(4, 6, 5) * 100
    layouts = [base, base.transpose(0, 2), base[:, ::2], base[0, 0, 0], base[:, :1].expand(4, 3, 5),
               base.permute(2, 0, 1).contiguous().permute(1, 2, 0), torch.tensor([float("nan"), -0.0, float("inf"), 1e-45])]
    dtypes = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.bool)
    for layout in layouts:
        for source in dtypes:
            x = layout.to(source)
            for dtype in dtypes:
                want = torch.ops.prims.convert_element_type.default(x, dtype)
                got = torch.ops.aten._to_copy.default(x, dtype=dtype)
                assert (got.dtype, got.shape, got.stride()) == (want.dtype, want.shape, want.stride()), (x.stride(), source, dtype)
                assert torch.equal(got.view(torch.uint8) if dtype is torch.bool else got.nan_to_num(0.5),
                                   want.view(torch.uint8) if dtype is torch.bool else want.nan_to_num(0.5))
                assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got.signbit(), want.signbit())


class _RMSNorm(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight, self.eps = torch.nn.Parameter(torch.randn(8)), 1e-6

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def test_a_tensorified_float_is_converted_by_aten_not_prims() -> None:
    """Under dynamic=True the eps reaches the graph as a tensor that AOTAutograd converts with
    prims.convert_element_type (Python, ~50 us a call); the wrapper calls aten._to_copy."""
    model = _RMSNorm()
    compiled = torch.compile(model, backend="xpu_lite", mode="lite", dynamic=True)
    with torch.no_grad():
        for batch in (2, 3, 5):
            x = torch.randn(batch, 8)
            got, sources = xpu_lite.run_and_get_code(compiled, x)
            source = sources[0] if batch == 2 else source
            want = model(x)
            assert torch.equal(got, want) and got.stride() == want.stride()
    assert xpu_lite.counters.forward_graphs == 1
    assert "torch.ops.prims." not in source, source
    assert "torch.ops.aten._to_copy.default(" in source and "(prims.convert_element_type.default as aten._to_copy.default)" in source
    with torch.no_grad():
        report = str(xpu_lite.explain(model, torch.randn(2, 8), mode="lite", dynamic=True))
    assert "called as aten._to_copy.default (what the prims op's Python implementation runs)" in report, report

def test_host_cast_is_eagers_conversion() -> None:
    """codegen/prims.host_cast gives what a 0-dim tensor of each float dtype holds of a
    float64 value: ties to even, subnormals, overflow to inf, NaN, -0.0, and float16/
    bfloat16 rounded through float32 as c10 converts (1 + 2**-11 + 2**-40 is 1.0 in
    float16, not the nearer 1 + 2**-10); edge values and 4000 random bit patterns."""
    edges = [0.0, -0.0, 1e-6, 0.1, 1 / 3, 65504.0, 65519.99, 65520.0, 3.4028234663852886e38, 3.4028235e38, 3.5e38,
             -1e39, 1e-45, 7e-46, 6e-8, 2.98e-8, 2.99e-8, 1e-40, math.inf, -math.inf, math.nan, 1 + 2 ** -24,
             1 + 2 ** -24 + 2 ** -60, 1 + 3 * 2 ** -24, 2049.0, 2051.0, 257.0, 259.0, 1 + 2 ** -8 + 2 ** -40,
             3.3895313892515355e38, 3.39e38, 1 + 2 ** -11 + 2 ** -40]
    rng = random.Random(0)
    patterns = [struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0] for _ in range(4000)]
    values = edges + [v * 2.0 ** -rng.randrange(1100) if rng.random() < 0.5 else v for v in patterns]
    for dtype in HOST_FLOATS:
        wants = torch.tensor(values, dtype=torch.float64).to(dtype).tolist()
        for value, want in zip(values, wants, strict=True):
            got = host_cast(value, dtype)
            assert (math.isnan(got) and math.isnan(want)) or (got == want and math.copysign(1, got) == math.copysign(1, want)), \
                (dtype, value, got, want)
        for value in edges:  # the 0-dim copy itself
            want = torch.tensor(value, dtype=torch.float64).to(dtype).item()
            assert host_cast(value, dtype) == want or math.isnan(want), (dtype, value)
    assert host_cast(1 + 2 ** -11 + 2 ** -40, torch.float16) == 1.0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["float32", "float16", "bfloat16"])
def test_a_tensorified_float_read_by_kernels_is_cast_in_python(device: str, dtype: torch.dtype) -> None:
    """In the default mode an RMSNorm's eps (a Python float: under dynamic=True a float64
    tensor input, cast to float64 then float32 by prims.convert_element_type) is read by
    value by the kernel: the wrapper casts the float in Python, with no aten call and no
    tensor. The norm is one kernel in every dtype. Before, in float16/bfloat16 the
    dtype-keeping cast of the sum was refused ("torch.float16 is not a kernel literal"),
    which split it into three kernels and a fallback."""
    model = _RMSNorm().to(device=device, dtype=dtype)
    reference = copy.deepcopy(model).double()
    compiled = torch.compile(model, backend="xpu_lite", dynamic=True)
    ulp = torch.finfo(dtype).eps
    with torch.no_grad(), capture() as reports:
        for batch in (2, 3, 5):
            x = torch.randn(batch, 8, device=device).to(dtype)
            got = compiled(x)
            assert got.dtype == dtype
            torch.testing.assert_close(got.double(), reference(x.double()), rtol=2 * ulp, atol=2 * ulp)
    assert xpu_lite.counters.forward_graphs == 1
    source = reports[0].source
    assert "_host_cast(" in source and "_to_copy" not in source and "torch.ops.prims." not in source, source
    kernels = {d.kernel.split()[0] for d in reports[0].decisions if d.kind is DecisionKind.KERNEL}
    assert kernels == {"kernel_0"}, reports[0].decisions
    casts = [d for d in reports[0].decisions if d.op == "prims.convert_element_type.default" and d.kind is DecisionKind.FALLBACK]
    assert len(casts) == 2 and all("no call: a host float the kernels read by value" in d.note for d in casts), casts



WRITEBACKS = {  # f(x, y) mutating its input x -> whether x's kernel stores its new value into x in place
    "mul_": (lambda x, y: (x.mul_(2), y * 2)[1], True),
    "add_ of another input": (lambda x, y: x.add_(y).shape[0], True),
    # not in place: the kernel reads the input at other elements than it stores
    "flipped": (lambda x, y: x.copy_(x.flip(0) * 2).shape[0], False),
    # not in place: another output of the same kernel reads the old value
    "old value read too": (lambda x, y: (x * 3, x.add_(1))[0], False),
    # not in place: the new value is read again (the stored node has another reader)
    "new value read": (lambda x, y: x.add_(1) * 2, False),
    # not in place: the input's strides are not those of the kernel's output
    "transposed input": (lambda x, y: (x.t().mul_(2), y * 2)[1], None),
}


@pytest.mark.parametrize("case", list(WRITEBACKS))
def test_an_inputs_new_value_is_stored_into_it_only_where_nothing_can_tell(device: str, case: str) -> None:
    """AOTAutograd ends a graph that mutates an input in `copy_(input, new_value)` (batch
    norm's running stats). Where the new value's kernel reads the input only at the element
    it stores, only for that value, and nothing else reads either, the kernel stores into the
    input and the copy_ makes no call (codegen/writebacks.py); elsewhere copy_ runs. Results
    and the mutated input bitwise eager's, at two sizes, one graph."""
    fn, in_place = WRITEBACKS[case]
    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n in (5, 7):
            x, y = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
            x_eager = x.clone()
            want, got = fn(x_eager, y), compiled(x, y)
            assert torch.equal(x, x_eager) and (torch.equal(got, want) if isinstance(want, torch.Tensor) else got == want)
    assert len(reports) == 1, [r.kind for r in reports]
    source = reports[0].source
    stored = "in place by kernel" in source
    calls = [d for d in reports[0].fallbacks if d.op == "aten.copy_.default"]
    if in_place is not None:
        assert stored == in_place, source
        assert all(("stores it into the input in place" in d.note) == in_place for d in calls) and calls, calls
    else:  # transposed: whichever the kernel's layout, the copy is then a call
        assert not stored or "copy_.default(" not in source, source
