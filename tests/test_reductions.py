"""Reduction kernels: OpInfo coverage, both launch strategies from one compilation, strided
reduced dims, fusion (kernel counts for softmax / layer_norm / rms_norm, forward and
backward), NaN and empty-row semantics, explain. float32 is compared with eager at
rtol = atol = 1e-5 (1e-4 for var/std, whose two-pass order differs from eager's);
float16/bfloat16 against a float64 reference (error <= 2x eager's + one rounding step);
integer and index results bitwise. Rows longer than runtime.PERSISTENT_MAX (1024) take the
looped strategy; sizes stay small otherwise (the CPU interpreter is slow).
"""
from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F

import xpu_lite
from xpu_lite.report import capture
from xpu_lite.runtime import PERSISTENT_MAX

from .conftest import assert_bitwise, low_precision_cases
from .test_kernels import LOW_PRECISION_TOL, _closer_than_eager, _opinfo, _run_samples, _to

LOOPED_ROW = PERSISTENT_MAX["cpu"] + 476  # > the largest block on every target: looped
REDUCTION_OPINFOS = [
    ("sum", ""), ("mean", ""), ("prod", ""), ("amax", ""), ("amin", ""), ("max", "reduction_with_dim"),
    ("min", "reduction_with_dim"), ("max", "reduction_no_dim"), ("argmax", ""), ("argmin", ""), ("var", ""),
    ("var", "unbiased"), ("std", ""), ("var_mean", ""), ("any", ""), ("all", ""), ("logsumexp", ""), ("softmax", ""),
    ("log_softmax", ""), ("nn.functional.layer_norm", ""), ("nn.functional.rms_norm", ""),
    ("nn.functional.group_norm", ""), ("nn.functional.cross_entropy", ""), ("nn.functional.nll_loss", ""),
    ("nn.functional.batch_norm", ""), ("nn.functional.instance_norm", ""), ("cumsum", ""), ("cumprod", ""),
    ("cummax", ""), ("cummin", ""), ("logcumsumexp", ""),
]
TOLERANCE = {"var": 1e-4, "std": 1e-4, "var_mean": 1e-4, "nn.functional.group_norm": 1e-4, "nn.functional.layer_norm": 1e-4,
             "nn.functional.batch_norm": 1e-4, "nn.functional.instance_norm": 1e-4}


def _flat(value) -> list[torch.Tensor]:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _samples(op, device: str, dtype: torch.dtype, count: int) -> list:
    samples = [s for s in op.sample_inputs(device, dtype) if isinstance(s.input, torch.Tensor) and s.input.numel() <= 512]
    # samples that compile to a kernel first: non-empty, at least one dim
    samples.sort(key=lambda s: (s.input.dim() == 0 or s.input.numel() == 0))
    return samples[:count]


def _float32_check(name: str):
    tol = TOLERANCE.get(name, 1e-5)

    def check(out, fn, sample) -> None:
        for actual, expected in zip(_flat(out), _flat(fn(sample.input, *sample.args)), strict=True):
            assert actual.shape == expected.shape and actual.dtype == expected.dtype
            if expected.dtype.is_floating_point:
                torch.testing.assert_close(actual, expected, rtol=tol, atol=tol, equal_nan=True)
            else:
                assert torch.equal(actual, expected)

    return check


def _low_precision_check(op, name: str, dtype: torch.dtype):
    def check(out, fn, sample) -> None:
        eager = fn(sample.input, *sample.args)
        reference = op(_to(sample.input, torch.float64), *[_to(a, torch.float64) for a in sample.args],
                       **{k: _to(v, torch.float64) for k, v in sample.kwargs.items()})
        for actual, e, r in zip(_flat(out), _flat(eager), _flat(reference), strict=True):
            if not e.dtype.is_floating_point:
                if name in ("argmax", "argmin", "max", "min"):
                    assert torch.equal(actual, e)  # the same inputs: the same first index
                continue
            _closer_than_eager(actual, e, r, LOW_PRECISION_TOL[dtype])

    return check


@pytest.mark.parametrize("where", ["default mode", "lite region"])
@pytest.mark.parametrize("name,variant", REDUCTION_OPINFOS, ids=[f"{n}-{v}" if v else n for n, v in REDUCTION_OPINFOS])
def test_reduction_opinfo_float32(device: str, name: str, variant: str, where: str) -> None:
    op = _opinfo(name, variant)
    samples = _samples(op, device, torch.float32, 3)
    samples += [s.noncontiguous() for s in samples[:1]]
    kernels = _run_samples(op, samples, where, _float32_check(name))
    assert kernels > 0, f"no sample of {name} was lowered to a kernel"


@pytest.mark.parametrize("name,variant,dtype,where", low_precision_cases(REDUCTION_OPINFOS))
def test_reduction_opinfo_low_precision(device: str, name: str, variant: str, dtype: torch.dtype, where: str) -> None:
    op = _opinfo(name, variant)
    if dtype not in op.supported_dtypes(device):
        pytest.skip(f"{name} does not support {dtype} in eager on {device}")
    samples = _samples(op, device, dtype, 2)
    samples = samples[:1] + [s.noncontiguous() for s in samples[1:]]
    kernels = _run_samples(op, samples, where, _low_precision_check(op, name, dtype))
    assert kernels > 0, f"no {dtype} sample of {name} was lowered to a kernel"


# -- strategies ---------------------------------------------------------------------------
CASES = {
    "softmax": lambda x: torch.softmax(x, -1),
    "log_softmax": lambda x: F.log_softmax(x, -1),
    "layer_norm": lambda x: F.layer_norm(x, x.shape[-1:]),
    "var_mean": lambda x: torch.var_mean(x, -1, correction=0),
    "argmax_max": lambda x: (x.argmax(-1), x.max(-1).values, x.amin(-1)),
    "sum_prod_any": lambda x: (x.sum(-1), (x * 0.001 + 1).prod(-1), (x > 3).any(-1), (x > -5).all(-1)),
    "logsumexp": lambda x: torch.logsumexp(x, -1),
    "mean_std_var": lambda x: (x.mean(-1), x.std(-1), x.var(-1, correction=2, keepdim=True)),
    "min_argmin": lambda x: (*x.min(-1), x.argmin(-1, keepdim=True)),
    "rms_norm": lambda x: F.rms_norm(x, x.shape[-1:], None, 1e-6),
    "group_norm": lambda x: F.group_norm(x.view(x.shape[0], 4, -1), 1),  # one group: the whole row
    "cross_entropy": lambda x: F.cross_entropy(x, (x.detach().abs() * 1000).long()[:, 0] % x.shape[1]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_both_strategies_from_one_compilation(case: str) -> None:
    fn = CASES[case]
    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    for rows, length in [(3, 36), (2, LOOPED_ROW), (5, 100)]:  # lengths divisible by 4 (group_norm)
        x = torch.randn(rows, length)
        x[0, length // 2] = 7.0  # a unique maximum away from the first chunk
        for actual, expected in zip(_flat(compiled(x)), _flat(fn(x)), strict=True):
            if expected.dtype.is_floating_point:
                torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)
            else:
                assert torch.equal(actual, expected)
    assert xpu_lite.counters.forward_graphs == 1, "one compilation for every row length"
    assert xpu_lite.counters.persistent_launches > 0 and xpu_lite.counters.looped_launches > 0


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("length", [300, LOOPED_ROW], ids=["persistent", "looped"])
def test_low_precision_norms_against_float64(dtype: torch.dtype, length: int) -> None:
    x = torch.randn(3, length, dtype=dtype) * 4
    w, b = torch.randn(length, dtype=dtype), torch.randn(length, dtype=dtype)
    fns = [lambda x, w, b: torch.softmax(x, -1), lambda x, w, b: F.layer_norm(x, (length,), w, b),
           lambda x, w, b: F.rms_norm(x, (length,), w, 1e-5), lambda x, w, b: x.sum(-1)]
    for fn in fns:
        torch._dynamo.reset()
        actual = torch.compile(fn, backend="xpu_lite", dynamic=True)(x, w, b)
        reference = fn(x.double(), w.double(), b.double())
        _closer_than_eager(actual, fn(x, w, b), reference, LOW_PRECISION_TOL[dtype])


MIXED_NORMS = {
    "layer_norm": lambda x, w, b: F.layer_norm(x, (4,), w, b),
    "group_norm": lambda x, w, b: F.group_norm(x, 2, w, b),
    "batch_norm": lambda x, w, b: F.batch_norm(x, None, None, w, b, True),
}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("norm", list(MIXED_NORMS))
def test_mixed_dtype_norms_keep_float32_statistics(device: str, norm: str, dtype: torch.dtype) -> None:
    """A float16/bfloat16 input with float32 parameters (autocast's norms after a bfloat16
    linear or convolution): eager's kernels keep mean and rstd in float32, and the backward
    reads them. torch._refs/_decomp round them to the input's dtype (their metas say so),
    and the input gradient of a sum of normalized values with unit weight, exactly zero,
    came out at the dtype's rounding of each row (4e-3 in bfloat16 training of a small
    autocast block; eager's 3e-16). decomp/normalization.py float32_statistics: here within
    1e-5 of zero, as eager's, at three sizes, one graph; outputs and parameter gradients
    against a float64 reference within 2x eager's error plus a rounding step."""
    fn = MIXED_NORMS[norm]
    w, b = torch.ones(4, device=device), torch.randn(4, device=device)
    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    try:
        fn(torch.ones(2, 4, 4, device=device, dtype=dtype), w, b)
    except RuntimeError as e:
        pytest.skip(f"eager {norm} on {device} refuses a {dtype} input with float32 parameters: {e}")
    for n in (3, 5, 7):
        x = (torch.randn(n, 4, 4, device=device) * 3 + 1).to(dtype).float()
        results = {}
        for name, run, cast in (("compiled", compiled, dtype), ("eager", fn, dtype), ("float64", fn, torch.float64)):
            xi, wi, bi = (t.detach().clone().requires_grad_() for t in (x, w, b))
            params = (wi.double(), bi.double()) if cast is torch.float64 else (wi, bi)
            out = run(xi.to(cast), *params)
            out.float().sum().backward()
            results[name] = (out, xi.grad, wi.grad, bi.grad)
        assert results["compiled"][1].abs().max() <= 1e-5, results["compiled"][1].abs().max()
        assert results["eager"][1].abs().max() <= 1e-5, "eager's own input gradient is nearly zero"
        for got, want, ref in zip(results["compiled"], results["eager"], results["float64"]):
            if got is not results["compiled"][1]:
                _closer_than_eager(got, want, ref, LOW_PRECISION_TOL[dtype])
    assert xpu_lite.counters.forward_graphs == 1


KEPT_NORMS = {"layer_norm": ("aten.native_layer_norm", "default"), "group_norm": ("aten.native_group_norm", "default"),
              "batch_norm": ("aten._native_batch_norm_legit", "no_stats")}  # keep_ops name, the overload traced


@pytest.mark.parametrize("norm", list(KEPT_NORMS))
def test_a_kept_mixed_dtype_norm_is_traced_with_float32_statistics(device: str, norm: str) -> None:
    """The norm kept (`keep_ops`), its backward kernels: they read the statistics the eager
    forward returns, float32 for a bfloat16 input with float32 parameters, where torch's
    metas say bfloat16; compiled for bfloat16, the interpreter raised ("Cannot bitcast
    data-type of size 32 to data-type of size 16"). The trace takes eager's dtypes
    (decomp/normalization.py statistics_fake_rules). Gradients against float64 within 2x
    eager's error plus a rounding step; the forward calls the op."""
    fn = MIXED_NORMS[norm]
    w, b = torch.rand(4, device=device) + 0.5, torch.randn(4, device=device)
    try:
        fn(torch.ones(2, 4, 4, device=device, dtype=torch.bfloat16), w, b)
    except RuntimeError as e:
        pytest.skip(f"eager {norm} on {device} refuses a bfloat16 input with float32 parameters: {e}")
    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True, options={"keep_ops": [KEPT_NORMS[norm][0]]})
    for n in (3, 5):
        x = (torch.randn(n, 4, 4, device=device) * 3 + 1).bfloat16().float()
        grad = torch.randn(n, 4, 4, device=device).bfloat16()
        results = {}
        for name, run, cast in (("compiled", compiled, torch.bfloat16), ("eager", fn, torch.bfloat16),
                                ("float64", fn, torch.float64)):
            xi, wi, bi = (t.detach().clone().requires_grad_() for t in (x, w, b))
            params = (wi.double(), bi.double()) if cast is torch.float64 else (wi, bi)
            if name == "compiled" and n == 3:
                out, (forward, _) = xpu_lite.run_and_get_code(lambda: run(xi.to(cast), *params).backward(grad.to(cast)))
                assert "torch.ops.{}.{}(".format(*KEPT_NORMS[norm]) in forward
            else:
                run(xi.to(cast), *params).backward(grad.to(cast))
            results[name] = (xi.grad, wi.grad, bi.grad)
        for got, want, ref in zip(*results.values()):
            _closer_than_eager(got, want, ref, LOW_PRECISION_TOL[torch.bfloat16])


# -- layouts ------------------------------------------------------------------------------
LAYOUTS = {
    "outer dim": lambda x: x.sum(0),
    "middle dim": lambda x: x.view(4, 3, -1).amax(1, keepdim=True),
    "two dims": lambda x: x.view(4, 3, -1).mean((0, 2)),
    "permuted input": lambda x: x.t().softmax(-1),
    "strided slice": lambda x: x[:, ::2].var(-1),
    "all dims": lambda x: (x.sum(), x.argmax()),
    "broadcast back": lambda x: x - x.mean(0, keepdim=True),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_strided_and_non_inner_reductions(layout: str) -> None:
    fn = LAYOUTS[layout]
    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    for cols in (6, 10):
        x = torch.randn(12, cols)
        for actual, expected in zip(_flat(compiled(x)), _flat(fn(x)), strict=True):
            if expected.dtype.is_floating_point:
                torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5)
            else:
                assert torch.equal(actual, expected)
    assert xpu_lite.counters.kernels_compiled > 0 and xpu_lite.counters.fallback_nodes == 0


# -- fusion targets -------------------------------------------------------------------------
def _kernels(fn, *args, backward: bool = False) -> list[int]:
    """Kernels per compiled graph (forward first), checking values against eager."""
    from xpu_lite.report import capture

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        out = compiled(*args)
        if backward:
            out.sum().backward()
    expected = fn(*[a.detach().requires_grad_(a.requires_grad) for a in args])
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-5)
    return [sum(1 for src in r.kernels if "_looped(" not in src) for r in reports]


@pytest.mark.parametrize("name,fn", [
    ("softmax", lambda x, w: torch.softmax(x, -1)),
    ("log_softmax", lambda x, w: F.log_softmax(x, -1)),
    ("layer_norm", lambda x, w: F.layer_norm(x, (64,), w, w)),
    ("rms_norm", lambda x, w: F.rms_norm(x, (64,), w, 1e-6)),
    ("gemma's rms_norm", lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * (1.0 + w)),
])
def test_forward_is_one_kernel(name: str, fn) -> None:
    assert _kernels(fn, torch.randn(6, 64), torch.randn(64)) == [1], name


@pytest.mark.parametrize("name,fn,most", [
    ("softmax", lambda x, w: torch.softmax(x, -1), 1),
    ("layer_norm", lambda x, w: F.layer_norm(x, (64,), w, w), 2),
    ("rms_norm", lambda x, w: F.rms_norm(x, (64,), w, 1e-6), 2),
    ("gemma's rms_norm", lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * (1.0 + w), 2),
])
def test_backward_kernel_count(name: str, fn, most: int) -> None:
    x, w = torch.randn(6, 64, requires_grad=True), torch.randn(64, requires_grad=True)
    forward, backward = _kernels(fn, x, w, backward=True)
    assert forward == 1 and backward <= most, (name, forward, backward)
    x2, w2 = x.detach().requires_grad_(), w.detach().requires_grad_()
    fn(x2, w2).sum().backward()
    torch.testing.assert_close(x.grad, x2.grad, rtol=1e-4, atol=1e-5)


def test_a_broadcast_value_of_inputs_is_computed_where_it_is_read(device: str) -> None:
    """A pointwise value of graph inputs that pointwise ops read broadcast (Gemma's RMSNorm
    scales by `1 + weight`) is computed where each reads it (inlining._of_inputs):
    the scaled norm is one kernel, where the add of 64 values and the product were two
    more after it. A value computed from a kernel's (the norm's own `rsqrt` of its rows)
    stays a member of that kernel's run, and a value an eager op reads too is stored."""
    def gemma_norm(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * (1.0 + w)

    def also_eager(x, w, m):
        scale = w * 2
        return x * scale, scale @ m

    compiled_norm, compiled_eager = (torch.compile(f, backend="xpu_lite", dynamic=True) for f in (gemma_norm, also_eager))
    with capture() as reports:
        for n in (3, 5, 8):
            x, w, m = torch.randn(2, n, 16, device=device), torch.randn(16, device=device), torch.randn(16, 4, device=device)
            torch.testing.assert_close(compiled_norm(x, w), gemma_norm(x, w), rtol=1e-5, atol=1e-6)  # a mean in rows of 16
            assert_bitwise(compiled_eager(x, w, m), also_eager(x, w, m))
    norm, eager = reports
    kernels = {d.op: d.kernel for d in norm.decisions if d.kernel}
    assert len({k.split()[0] for k in kernels.values()}) == 1, kernels  # one kernel (persistent or looped by the row's length)
    computed = [d.op for d in norm.decisions if "computed where" in d.kernel]
    assert computed == ["aten.add.Tensor"], computed  # 1 + w; the row's eps add and rsqrt are members
    scale = next(d.kernel for d in eager.decisions if d.op == "aten.mul.Tensor")
    assert "computed where" not in scale, scale


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("norm", ["batch_norm", "instance_norm"])
def test_batch_norm_is_kernels_with_running_stats(device: str, norm: str, training: bool) -> None:
    """The default mode decomposes batch_norm (instance_norm runs it on a reshaped input):
    its statistics over every dim but the channel, the affine map and the running-stat
    update are kernels, forward and backward. Outputs, input and parameter gradients and
    running stats within 1e-4 of eager's (var's two-pass order differs), three sizes, one graph."""
    import copy

    from xpu_lite.report import capture

    from .test_decomp import _norm_module, _step

    eager = _norm_module(norm, device, training)
    mine = copy.deepcopy(eager)
    compiled = torch.compile(mine, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n in (3, 5, 7):
            x = torch.randn(n, 4, 6, 6, device=device)
            for got, want in zip(_step(compiled, x), _step(eager, x), strict=True):
                torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
            for name in ("running_mean", "running_var", "weight", "bias"):
                torch.testing.assert_close(getattr(mine, name), getattr(eager, name), rtol=1e-4, atol=1e-4)
            torch.testing.assert_close([mine.weight.grad, mine.bias.grad], [eager.weight.grad, eager.bias.grad],
                                       rtol=1e-4, atol=1e-4)
    assert xpu_lite.counters.forward_graphs == 1
    ops = {d.op for r in reports for d in r.decisions}
    assert not {op for op in ops if "batch_norm" in op}, ops
    eager_calls = [(d.op, d.note) for r in reports for d in r.fallbacks]
    # every op a kernel, also the backward's `grad_sum * (1 / N)`, whose SymFloat the wrapper
    # passes as a float32 argument. batch_norm's running stats' copy_ into the buffers makes
    # no call (since 2026-11-27): the kernel computing them stores into the buffers in place;
    # instance_norm's are means over the batch of its per-instance stats, written back eagerly
    assert all(op == "aten.copy_.default" for op, _ in eager_calls), eager_calls
    in_place = [note for _, note in eager_calls if "stores it into the input in place" in note]
    assert len(in_place) == len(eager_calls) if norm == "batch_norm" else not in_place, eager_calls
    writebacks = [line for r in reports for line in r.source.splitlines() if "in place by kernel" in line]
    assert len(writebacks) == (3 if training and norm == "batch_norm" else 0), writebacks


class _MovingAverage(torch.nn.Module):
    """A user's own running mean of its output's rows (a teacher's centre, say); `shift`:
    a matmul's row added to it first, an eager call between y's kernel and the update."""

    def __init__(self, shift: bool) -> None:
        super().__init__()
        self.register_buffer("centre", torch.zeros(8))
        self.w, self.v, self.shift = torch.nn.Parameter(torch.randn(8, 8)), torch.nn.Parameter(torch.randn(8)), shift

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * 2
        with torch.no_grad():
            self.centre.mul_(0.9)
            if self.shift:
                self.centre.add_((self.w @ self.v[:, None])[:, 0])
            self.centre.add_(y.mean(0), alpha=0.1)
        return y


@pytest.mark.parametrize("shift", [False, True], ids=["decay", "decay_and_a_matmul"])
def test_a_moving_average_of_a_reduction_is_one_kernel_storing_in_place(device: str, shift: bool) -> None:
    """`buf.mul_(0.9).add_(y.mean(0), alpha=0.1)`: the decay comes first in the program but
    the mean reads nothing it computes, so the mean runs first, with y's kernel as its
    prologue, and the decay joins it as a row value (fusion._reduction_ahead): one kernel,
    which stores y and, into the buffer in place, its new value: the copy_ makes no call.
    Before, the decay was a kernel of its own and the sum a copy_ into the buffer. With a
    matmul's row added to the decay, the matmul (an eager call) runs after y's kernel and
    before the update's, which is then a kernel of its own. The output and the buffer within
    1e-6 of eager's (the mean's order differs), two sizes, one graph."""
    import copy

    eager = _MovingAverage(shift).to(device)
    mine = copy.deepcopy(eager)
    compiled = torch.compile(mine, backend="xpu_lite", dynamic=True)
    with torch.no_grad(), capture() as reports:
        for n in (3, 6):
            x = torch.randn(n, 8, device=device)
            torch.testing.assert_close(compiled(x), eager(x), rtol=1e-6, atol=1e-6)
            torch.testing.assert_close(mine.centre, eager.centre, rtol=1e-6, atol=1e-6)
    assert xpu_lite.counters.forward_graphs == 1 and len(reports) == 1
    source = reports[0].source
    launches = [line.split("# ")[-1] for line in source.splitlines() if "](" in line and "# kernel_" in line]
    if shift:
        assert launches == ["kernel_0: mul", "kernel_1: mean, mul_3, add_3, add_4"], launches
        assert source.index("torch.ops.aten.mm.default(") < source.index("kernel_1: mean"), source
    else:
        assert launches == ["kernel_0: mul, mean, mul_3, add_3"], launches
    assert "in place by kernel_" in source and "copy_.default(" not in source, source


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["float32", "float16", "bfloat16"])
def test_batch_norm_inference_is_eagers_on_cpu(device: str, dtype: torch.dtype) -> None:
    """batch_norm in inference as eager's cpu kernel computes it: a float32 scale and shift
    per channel, `x * scale + shift` as one fma (decomp/normalization.py), bitwise eager's
    for contiguous and channels-last inputs of 2 to 5 dims, with and without weight and
    bias (torch._decomp's formula differed in 1886 of 4096 float32 values before
    2026-11-27). On cuda/xpu, whose eager runs cuDNN/oneDNN, torch._decomp's formula:
    within 1e-5 of eager's (float32; the dtype's resolution otherwise). No eager call."""
    if device == "cpu" and torch.backends.cpu.get_cpu_capability() == "DEFAULT":
        pytest.skip("eager's cpu kernels without AVX2/AVX512 (ATEN_CPU_CAPABILITY=default) never fuse")

    def fn(x, mean, var, w, b):
        return F.batch_norm(x, mean, var, w, b, False, 0.1, 1e-5), F.batch_norm(x, mean, var, None, None, False, 0.1, 1e-3)

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    torch.manual_seed(0)
    stats = [torch.randn(8, device=device) for _ in range(3)] + [torch.rand(8, device=device) + 0.5]
    mean, w, b, var = stats
    cases = [(16, 8), (4, 8, 33), (2, 8, 5, 7), (2, 8, 2, 3, 4)]
    for shape in cases:
        x = torch.randn(shape, device=device).to(dtype)
        for layout in ([torch.contiguous_format, torch.channels_last] if len(shape) == 4 else [torch.contiguous_format]):
            x = x.contiguous(memory_format=layout)
            got, want = compiled(x, mean, var, w, b), fn(x, mean, var, w, b)
            if device == "cpu":
                assert_bitwise(got, want)
            else:
                tol = 1e-5 if dtype is torch.float32 else 8e-3
                torch.testing.assert_close(got, want, rtol=tol, atol=tol)
            assert [t.stride() for t in got] == [t.stride() for t in want]
    assert xpu_lite.counters.fallback_nodes == 0


@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
@pytest.mark.parametrize("layout", [torch.contiguous_format, torch.channels_last], ids=["nchw", "nhwc"])
def test_group_norm_training_is_kernels_with_symbolic_sizes(device: str, affine: bool, layout: torch.memory_format) -> None:
    """group_norm's backward takes 1 / (HxW * channels per group) as a float32 tensor
    (decomp/normalization.py): before 2026-11-27 torch._decomp's Python float became float64
    host ops under dynamic=True, eager calls that strict=True refused on cpu. Now no eager
    call is left, forward or backward; results and gradients within 1e-4 of eager's at three
    image sizes, one graph."""
    import copy

    eager = torch.nn.GroupNorm(2, 8, affine=affine).to(device)
    if affine:
        with torch.no_grad():
            eager.weight.uniform_(0.5, 1.5), eager.bias.uniform_(-0.5, 0.5)
    mine = copy.deepcopy(eager)
    compiled = torch.compile(mine, backend="xpu_lite", dynamic=True, options={"strict": True})
    with capture() as reports:
        for size in (3, 5, 6):
            x = torch.randn(2, 8, size, size + 1, device=device).contiguous(memory_format=layout)
            grad = torch.randn(2, 8, size, size + 1, device=device)
            results = []
            for module in (compiled, eager):
                xi = x.detach().clone().requires_grad_()
                out = module(xi)
                out.backward(grad)
                results.append([out, xi.grad, *(p.grad for p in module.parameters())])
            for got, want in zip(*results, strict=True):
                torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
            for p in (*mine.parameters(), *eager.parameters()):
                p.grad = None
    assert xpu_lite.counters.forward_graphs == 1
    assert [r.kind for r in reports] == ["forward", "backward"], [r.kind for r in reports]
    assert not [d.op for r in reports for d in r.fallbacks], [(d.op, str(d.reason)) for r in reports for d in r.fallbacks]


PROLOGUES = {
    "cat, sum": lambda a, b: torch.cat([a, b], -1).sum(-1),
    "pad, amax": lambda a, b: F.pad(a, (1, 2), value=-3.0).amax(-1),
    "cat of producers, softmax": lambda a, b: torch.cat([a * 2, b.exp()], -1).softmax(-1),
    "pad, sum over the outer dim": lambda a, b: F.pad(a, (0, 0, 2, 1)).sum(0),
    "flip, cumsum": lambda a, b: a.flip(-1).cumsum(-1),
    "repeat, argmax": lambda a, b: a.repeat(1, 2).argmax(-1),
    "slice_scatter and select_scatter, sum": lambda a, b: torch.select_scatter(torch.slice_scatter(a, b * 2, 1, 1, 5), b[:, 0], 1, 0).sum(-1),
    "arange, cumsum": lambda a, b: (torch.arange(a.shape[-1], device=a.device) * 0.5).cumsum(0),
}


@pytest.mark.parametrize("case", list(PROLOGUES))
def test_a_placing_op_before_a_reduction_or_scan_is_computed_in_its_kernel(device: str, case: str) -> None:
    """cat, pad, flip or repeat feeding a reduction or scan is computed per element of the
    reduction's input in its kernel, at the space's coordinates with masked loads
    (fusion._takes_as_prologue): one kernel, persistent and looped rows, one compilation.
    Lookups (embedding, gather) are too: test_gather.py."""
    from xpu_lite.report import capture

    fn = PROLOGUES[case]
    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for rows, length in ((3, 5), (2, LOOPED_ROW)):
            a, b = torch.randn(rows, length, device=device), torch.randn(rows, 4, device=device)
            a[-1, length // 2] = 9.0  # a unique maximum away from the first chunk
            actual, expected = compiled(a, b), fn(a, b)
            if expected.dtype.is_floating_point:
                torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5)
            else:
                assert torch.equal(actual, expected)
    assert xpu_lite.counters.forward_graphs == 1 and xpu_lite.counters.fallback_nodes == 0
    assert [len({d.kernel.split()[0] for d in r.decisions if d.kernel}) for r in reports] == [1], reports


def test_cumsum_gradient_reads_its_flipped_input_in_the_scan() -> None:
    """cumsum's gradient is flip, cumsum, flip: the first flip is computed in the scan's
    kernel (was a kernel storing it first); the second reads the scan's result at other
    positions, so a kernel of its own reads it from memory."""
    from xpu_lite.report import capture

    fn = lambda x: (x * 2).cumsum(-1)  # noqa: E731
    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for length in (5, LOOPED_ROW):
            ours, eagers = (torch.randn(3, length).requires_grad_() for _ in range(2))
            with torch.no_grad():
                eagers.copy_(ours)
            weights = torch.randn(3, length)
            (compiled(ours) * weights).sum().backward()
            (fn(eagers) * weights).sum().backward()
            # running sums of up to 1500 float32 terms, added in another order than eager's
            torch.testing.assert_close(ours.grad, eagers.grad, rtol=1e-4, atol=1e-4)
    backward = {d.node: d.kernel.split()[0] for d in reports[1].decisions if d.kernel}
    scan = next(k for node, k in backward.items() if node.startswith("cumsum"))
    flips = sorted(k for node, k in backward.items() if node.startswith("flip"))
    assert len(set(backward.values())) == 2 and scan in flips and flips[0] != flips[1], backward


# -- scans ----------------------------------------------------------------------------------
def _scan_bound(x64: torch.Tensor, dim: int, product: bool) -> torch.Tensor:
    """How far a float32 running sum or product of k elements, in any order, can be from
    the exact one: k rounding steps of the running sum of |x| (or of the running product),
    plus the final rounding, with 1% to spare."""
    dim = dim % x64.dim()
    k = torch.arange(1, x64.shape[dim] + 1, dtype=torch.float64, device=x64.device).view([-1 if d == dim else 1 for d in range(x64.dim())])
    scale = x64.cumprod(dim).abs() if product else x64.abs().cumsum(dim)
    return (k + 1) * 2.0**-24 * scale * 1.01


@pytest.mark.parametrize("dim", [-1, 0], ids=["inner", "outer"])
def test_scans_walk_rows_in_one_kernel_for_every_length(device: str, dim: int) -> None:
    """cumsum and cumprod (and what feeds and reads them) are one kernel that walks each
    row: whole, or in chunks after a per-row carry. Float results are within the rounding
    bound of the exact (float64) scan; integer and bool inputs give int64 bitwise. One
    compilation for every length, persistent and looped launches."""
    def fn(x, p, m):
        return ((x * 2).cumsum(dim).relu(), (p * 2).cumprod(dim), m.cumsum(dim), (x > 0).cumsum(dim),
                m.cumsum(dim, dtype=torch.int64), torch.cumprod(m % 3 - 1, dim))

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    for length in (5, 37, LOOPED_ROW):
        shape = (3, length) if dim == -1 else (length, 3)
        x = torch.randn(shape, device=device)
        p = 0.5 + 0.05 * torch.randn(shape, device=device)  # products near 1: neither 0 nor inf after LOOPED_ROW
        m = torch.randint(-1000, 1000, shape, device=device, dtype=torch.int32)
        out, eager = compiled(x, p, m), fn(x, p, m)
        exact_sum, exact_prod = (x.double() * 2).cumsum(dim), (p.double() * 2).cumprod(dim)
        assert (out[0].double() - exact_sum.relu()).abs().le(_scan_bound(x.double() * 2, dim, False)).all()
        assert (out[1].double() - exact_prod).abs().le(_scan_bound(p.double() * 2, dim, True)).all()
        for actual, expected in zip(out[2:], eager[2:], strict=True):
            assert actual.dtype == expected.dtype == torch.int64 and torch.equal(actual, expected)
    assert xpu_lite.counters.forward_graphs == 1, "one compilation for every length"
    assert xpu_lite.counters.fallback_nodes == 0
    assert xpu_lite.counters.persistent_launches > 0 and xpu_lite.counters.looped_launches > 0


def _glu_sum(x):
    a, b = x.chunk(2, -1)
    return (a * torch.sigmoid(b)).sum(-1)


def _softmax_gate(x):
    a, b = x.chunk(2, -1)
    return torch.softmax(a, -1) * torch.sigmoid(b)


def _halves(x):
    a, b = x.chunk(2, -1)
    return (a * b).amax(-1) + (a - b).sum(-1), torch.cumsum(a * b, -1)


def _halves_of_dim_0(x):
    a, b = x.chunk(2, 0)
    return (a - b).sum(1)


@pytest.mark.parametrize("fn", [_glu_sum, _softmax_gate, _halves, _halves_of_dim_0], ids=lambda fn: fn.__name__)
def test_reductions_join_values_of_sizes_equal_under_the_guards(device: str, fn) -> None:
    """A dynamic dim's halves (chunk: (n + 1) // 2 and n - (n + 1) // 2) have sizes equal
    only under the guard their product made: a reduction of their product, a gate on a
    softmax of one half, reductions and a scan of both are one kernel, looped rows too (the
    first two were two kernels until 2026-11-26, the product's or the gate's apart; the
    last two were one already). Forward and backward against eager, one graph."""
    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for shape in ((4, 14), (3, 6), (2, 2 * LOOPED_ROW)) if fn is not _halves_of_dim_0 else ((4, 6), (8, 3), (6, LOOPED_ROW)):
            x = torch.randn(shape, device=device)
            ours, eager = x.clone().requires_grad_(), x.clone().requires_grad_()
            got, expected = _flat(compiled(ours)), _flat(fn(eager))
            for g, e in zip(got, expected, strict=True):
                torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)
            sum(g.sum() for g in got).backward()
            sum(e.sum() for e in expected).backward()
            torch.testing.assert_close(ours.grad, eager.grad, rtol=1e-5, atol=1e-5)
    assert xpu_lite.counters.forward_graphs == 1 and len(reports) == 2, reports
    assert not reports[0].fallbacks and reports[0].counts()[2] == "1", reports[0].rows()


def test_a_scan_fuses_with_a_reduction_of_its_row() -> None:
    """Softmax, a cumsum of it and a cumprod of their product: one kernel. Looped, the scans
    run in the softmax's last pass, their carries starting at that pass."""
    def fn(x):
        return (x.cumsum(1) * x.softmax(1)).cumprod(1)

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for length in (6, LOOPED_ROW):
            x = torch.randn(4, length) * 0.1
            torch.testing.assert_close(compiled(x), fn(x), rtol=1e-4, atol=1e-6)
    assert len(reports) == 1 and len(reports[0].kernels) == 2, reports  # one kernel's two sources
    (looped,) = [source for source in reports[0].kernels if "def kernel_0_" in source and "_looped(" in source]
    assert looped.index("pass 2 of 3") < looped.index("carry") < looped.index("pass 3 of 3"), looped  # carries start at pass 3


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_low_precision_scans_against_float64(dtype: torch.dtype) -> None:
    """fp16/bf16 scans accumulate in float32 and round each result once, as eager does."""
    fn = lambda x: (x.cumsum(-1), (1 + x * 0.01).cumprod(-1))  # noqa: E731
    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    for length in (37, LOOPED_ROW):
        x = torch.randn(3, length).to(dtype)
        for actual, e, r in zip(compiled(x), fn(x), fn(x.double()), strict=True):
            _closer_than_eager(actual, e, r, LOW_PRECISION_TOL[dtype])
    assert xpu_lite.counters.fallback_nodes == 0


def test_scan_gradients_and_reasons() -> None:
    """cumsum's backward (flip, cumsum, flip) runs in kernels too; explain says a kernel
    scans its rows (or reduces them, with a reduction in it); a scan the kernel cannot
    honour says why: a dtype argument whose conversion rounds, a float64 input."""
    def fn(x):
        return (x.cumsum(1) * x).sum()

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for length in (5, 9):
            x = torch.randn(3, length, requires_grad=True)
            (actual,) = torch.autograd.grad(compiled(x), x)
            (expected,) = torch.autograd.grad(fn(x), x)
            torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5)
    backward = next(r for r in reports if r.kind == "backward")
    assert [d.op for d in backward.decisions if d.op == "aten.cumsum.default" and d.kernel], backward.decisions
    assert not any(d.op == "aten.cumsum.default" for r in reports for d in r.fallbacks)

    for fn, label in [(lambda x: x.cumsum(0) * 2, "kernel_0 (2 nodes; scans 4 per row: persistent)"),
                      (lambda x: x.cumsum(0).softmax(0), "kernel_0 (6 nodes; reduces 4 per row: persistent)")]:
        report = xpu_lite.explain(fn, torch.randn(4, 3))
        assert {d.kernel for d in report.graphs[0].decisions if d.kernel} == {label}, report
    report = xpu_lite.explain(lambda x: (x.cumsum(0, dtype=torch.float16), x.double().cumsum(0)), torch.randn(4))
    reasons = sorted(str(d.reason) for d in report.graphs[0].fallbacks if d.op == "aten.cumsum.default")
    assert len(reasons) == 2 and "a float64 input" in reasons[0], reasons
    assert "dtype=torch.float16: this lowering takes a dtype only where the input converts to it exactly" in reasons[1]


RUNNING_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64]
FLOAT_DTYPES = RUNNING_DTYPES[:3]


@pytest.mark.parametrize("dtype", RUNNING_DTYPES, ids=[str(d).removeprefix("torch.") for d in RUNNING_DTYPES])
def test_running_max_and_min_are_bitwise_eager(device: str, dtype: torch.dtype) -> None:
    """cummax and cummin fold each row one element at a time, in order (an ordered kernel,
    RBLOCK 1, at any length): values and indices are eager's, ties (the later index), -inf
    and NaN (it stays until the next NaN, whose index it takes) included; a consumer of the
    values fuses. (A consumer computing a NaN in bfloat16 would differ in its payload bits
    alone: eager's vectorized cpu cast writes 0xFFFF, its scalar one 0x7FC0, as ours.)"""
    def fn(x):
        values, indices = torch.cummax(x, -1)
        return values, indices, values > 0, *torch.cummin(x, 0)

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for length in (5, 9, LOOPED_ROW):
            x = (torch.randn(4, length, device=device) * 4).to(dtype)
            x[2, :3] = 1  # ties
            if dtype.is_floating_point:
                x[1, 2] = x[1, 4] = x[3, 0] = float("nan")
                x[0, 1] = float("-inf")
            assert_bitwise(compiled(x), fn(x))
    assert xpu_lite.counters.forward_graphs == 1 and not any(r.fallbacks for r in reports)
    kernels = {d.kernel for d in reports[0].decisions if d.op in ("aten.cummax.default", "aten.cummin.default")}
    assert len(kernels) == 2 and all("in order, one element at a time" in k for k in kernels), kernels


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=[str(d).removeprefix("torch.") for d in FLOAT_DTYPES])
def test_float_scans_are_eagers_cpu_loop(dtype: torch.dtype) -> None:
    """Under the interpreter a float cumsum/cumprod is eager's cpu loop, bitwise: carried in
    eager's acc_type (a double for float32, a float for float16/bfloat16), every element
    added (multiplied) in order, the carry of the chunks before entering at a chunk's first
    lane; a row starting with -0.0 sums to +0.0 as eager's `0 + x`. Persistent and looped
    rows, the last dim and the first, a transposed input, NaN and inf, a dtype argument.
    (On a gpu the block scans in parallel, as eager's cuda kernel does:
    test_scans_walk_rows_in_one_kernel_for_every_length bounds it.)"""
    def fn(x, p):
        return (x.cumsum(-1), x.cumsum(0) * 2, x.t().cumsum(1), p.cumprod(-1), p.cumprod(0),
                x.cumsum(-1, dtype=torch.float32))

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    for length in (5, 37, LOOPED_ROW):
        x = torch.randn(4, length) * 100
        x[0, :3] = torch.tensor([-0.0, -0.0, 1.0])
        x[:, 0] = -0.0
        x[1, 2], x[2, 4] = float("inf"), float("nan")
        p = 1 + 0.01 * torch.randn(4, length)
        x, p = x.to(dtype), p.to(dtype)
        assert_bitwise(compiled(x, p), fn(x, p), nan_payloads=False)  # eager's bfloat16 casts write 0xFFFF
    assert xpu_lite.counters.forward_graphs == 1 and xpu_lite.counters.fallback_nodes == 0
    assert xpu_lite.counters.persistent_launches > 0 and xpu_lite.counters.looped_launches > 0


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=[str(d).removeprefix("torch.") for d in FLOAT_DTYPES])
def test_logcumsumexp_is_eagers_loop(device: str, dtype: torch.dtype) -> None:
    """logcumsumexp folds each row one element at a time, in order, as eager's cpu loop:
    log1p(exp(min - max)) + max from -inf, carried in a double (eager's acc_type), the
    element itself where both are the same infinity, NaN from a NaN; along the last dim,
    the first, and a transposed input. On cpu bitwise eager's; on a gpu (eager's cuda
    kernel scans in parallel) no further from float64 than twice eager's error plus 4
    ulps: a float carry drifted past that over the looped row on an H100."""
    def fn(x):
        return torch.logcumsumexp(x, -1), torch.logcumsumexp(x, 0) * 2, torch.logcumsumexp(x.t(), 1)

    inf = float("inf")
    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for length in (5, 9, LOOPED_ROW):
            x = torch.randn(4, length, device=device) * 6
            x[0, :4] = torch.tensor([-inf, -inf, 1.0, inf])
            x[1, :4] = torch.tensor([inf, -inf, inf, 2.0])
            x[2, 3] = float("nan")
            x = x.to(dtype)
            actual = compiled(x)
            if device == "cpu":
                assert_bitwise(actual, fn(x), nan_payloads=False)
            else:
                for a, e, r in zip(actual, fn(x), fn(x.double()), strict=True):
                    assert torch.equal(a.isnan(), e.isnan())
                    _closer_than_eager(a, e, r, LOW_PRECISION_TOL.get(dtype, 4 * torch.finfo(dtype).eps))
    assert xpu_lite.counters.forward_graphs == 1 and not any(r.fallbacks for r in reports), [r.fallbacks for r in reports]
    kernels = {d.kernel for d in reports[0].decisions if d.op == "aten.logcumsumexp.default"}
    assert kernels and all("in order, one element at a time" in k for k in kernels), kernels


def test_logcumsumexp_gradients_are_kernels() -> None:
    """Its backward (autograd's formula: logcumsumexp of the reversed, shifted gradients)
    is kernels too, within float32 tolerance of eager's; a float64 input stays eager,
    saying why."""
    def fn(x):
        return (torch.logcumsumexp(x, 1) * x.cos()).sum()

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for length in (5, 9):
            x = (torch.randn(3, length) * 3).requires_grad_()
            torch.testing.assert_close(torch.autograd.grad(compiled(x), x), torch.autograd.grad(fn(x), x), rtol=1e-5, atol=1e-5)
    assert len(reports) == 2 and not any(r.fallbacks for r in reports), [r.fallbacks for r in reports]
    report = xpu_lite.explain(lambda x: torch.logcumsumexp(x, 0), torch.randn(4, dtype=torch.float64))
    (reason,) = [str(d.reason) for d in report.graphs[0].fallbacks if d.op == "aten.logcumsumexp.default"]
    assert "float64" in reason, reason


ZERO_DIM_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.bool]


@pytest.mark.parametrize("dtype", ZERO_DIM_DTYPES, ids=[str(d).removeprefix("torch.") for d in ZERO_DIM_DTYPES])
def test_reductions_of_a_0_dim_input_are_pointwise(device: str, dtype: torch.dtype) -> None:
    """A 0-dim input has one element: sum, prod (int64 for integers and bools), mean, amax,
    max/min with and without dim, argmax, any/all, the scans and logcumsumexp are its value
    in the result's dtype, or index 0: computed inline in one kernel with the 0-dim
    arithmetic around them, bitwise eager's (NaN and infinities too). var/std of one
    element stay eager, saying why."""
    def fn(x):
        values = [x.sum(), x.sum(0, keepdim=True), x.prod(), x.any(), x.all(), torch.cumsum(x, 0)]
        if dtype != torch.bool:  # bool extremes stay eager, 0-dim or not (eager has no bool argmax)
            values += [x.amax(), x.amin(0), *x.max(0), *torch.min(x, -1), x.argmax(), x.argmin(0), *torch.cummax(x, 0)]
        if dtype.is_floating_point:
            values += [x.mean(), x.mean(0, keepdim=True) * 2, torch.cumprod(x, 0) + 1, torch.logcumsumexp(x, 0)]
        return values

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    cases = [2.5, float("nan"), float("-inf"), 0.0] if dtype.is_floating_point else [3, 0, -7] if dtype != torch.bool else [True, False]
    with capture() as reports:
        for value in cases:
            x = torch.tensor(value, dtype=dtype, device=device)
            assert_bitwise(compiled(x), fn(x), nan_payloads=False)
    assert not any(r.fallbacks for r in reports), [r.fallbacks for r in reports]
    assert xpu_lite.counters.kernels_compiled == 1, xpu_lite.counters
    report = xpu_lite.explain(lambda x: (torch.var(x, correction=0), x.std(correction=0)), torch.tensor(1.5))
    reasons = [(d.op, str(d.reason)) for d in report.graphs[0].fallbacks]  # std: the sqrt of a var
    assert len(reasons) == 2 and all(op == "aten.var.correction" and "a 0-dim input" in r for op, r in reasons), reasons


def test_running_max_gradients_and_reasons() -> None:
    """cummax's backward scatters each gradient to the index it took (scatter_add kernels);
    a bool input stays eager, saying why."""
    def fn(x):
        return (torch.cummax(x, 1).values * x).sum() + torch.cummin(x, 0).values.sum()

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for length in (5, 9):
            x = torch.randn(3, length)
            x[1, :3] = 0.5  # ties: the gradient goes to the later element
            x.requires_grad_()
            assert_bitwise(torch.autograd.grad(compiled(x), x), torch.autograd.grad(fn(x), x))
    assert not any(r.fallbacks for r in reports), [r.fallbacks for r in reports]
    report = xpu_lite.explain(lambda x: torch.cummax(x, 0), torch.randn(4) > 0)
    (reason,) = [str(d.reason) for d in report.graphs[0].fallbacks if d.op == "aten.cummax.default"]
    assert "a bool input" in reason, reason


# -- semantics ----------------------------------------------------------------------------
def test_nan_propagates_through_max_min_and_arg() -> None:
    fn = lambda x: (x.amax(-1), x.amin(-1), x.argmax(-1), x.argmin(-1), x.max(-1).indices)  # noqa: E731
    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    for length in (7, LOOPED_ROW):
        x = torch.randn(4, length)
        x[1, 3] = float("nan")
        x[2, length - 1] = float("nan")
        x[3] = float("-inf")
        x[3, 5] = float("-inf")
        for actual, expected in zip(compiled(x), fn(x), strict=True):
            assert torch.equal(actual.isnan(), expected.isnan())
            torch.testing.assert_close(actual, expected, equal_nan=True, rtol=0, atol=0)


def test_integer_reductions_accumulate_in_int64_bitwise() -> None:
    fn = lambda x: (x.sum(-1), x.prod(-1), x.amax(0), (x > 0).sum(0), x.argmin(-1))  # noqa: E731
    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    for cols in (5, 9):
        x = torch.randint(-3, 4, (6, cols), dtype=torch.int32) * 100000
        out, expected = compiled(x), fn(x)
        for actual, e in zip(out, expected, strict=True):
            assert actual.dtype == e.dtype and torch.equal(actual, e)
    assert xpu_lite.counters.fallback_nodes == 0


def test_empty_rows_give_identity_or_eager_error() -> None:
    # Dynamo specializes a size that becomes 0 (and recompiles), so the kernels rarely see
    # an empty row; when one does, sums give the identity and max/min raise like eager
    def sums(x):
        x = x[:, 3:]
        return x.sum(-1), x.prod(-1), x.mean(-1), x.any(-1), x.all(-1)

    compiled = torch.compile(sums, backend="xpu_lite", dynamic=True)
    for cols in (5, 6, 3):
        x = torch.randn(4, cols)
        for actual, expected in zip(compiled(x), sums(x), strict=True):
            torch.testing.assert_close(actual, expected, equal_nan=True)

    def maxes(x):
        return x.amax(-1) * 2

    # Dynamo guards that a max's dimension is not empty (a recompile raises, as eager does):
    # no check in the wrapper. With backed_size_oblivious a size may be 0 unguarded: the
    # wrapper checks, and raises eager's exception type
    compiled = torch.compile(maxes, backend="xpu_lite", dynamic=True)
    _, (source,) = xpu_lite.run_and_get_code(compiled, torch.randn(4, 5))
    assert "if rnumel == 0:" not in source, source
    torch._dynamo.reset()
    xpu_lite.reset_counters()
    with torch.fx.experimental._config.patch(backed_size_oblivious=True):
        compiled = torch.compile(maxes, backend="xpu_lite", dynamic=True)
        _, (source,) = xpu_lite.run_and_get_code(compiled, torch.randn(4, 5))
        assert "if rnumel == 0:" in source and "if xnumel > 0:" in source, source
        torch.testing.assert_close(compiled(torch.randn(0, 4)), maxes(torch.randn(0, 4)))
        with pytest.raises(IndexError, match="empty dimension"):
            compiled(torch.empty_strided((4, 0), (0, 1)))  # the guarded strides: stride 0 == size 1
        assert xpu_lite.counters.graphs_compiled == 1, "recompiled"
    with pytest.raises(IndexError):
        maxes(torch.randn(4, 0))  # eager raises the same exception type


def test_lite_mode_keeps_softmax_outside_regions_bitwise() -> None:
    def fn(x):
        y = torch.softmax(x, -1)
        with xpu_lite.compile_region():
            z = torch.softmax(x * 2, -1)
        return y, z

    x = torch.randn(4, 33)
    compiled = torch.compile(fn, backend="xpu_lite", mode="lite", dynamic=True)
    (y, z), (source,) = xpu_lite.run_and_get_code(compiled, x)
    y_eager, z_eager = fn(x)
    assert torch.equal(y, y_eager), "outside the region: the eager softmax call (a preserved CIA op), bitwise"
    torch.testing.assert_close(z, z_eager, rtol=1e-5, atol=1e-6)
    assert "torch.ops.aten.softmax.int(" in source and "kernel_0_mul_softmax_persistent" in source


def test_explain_shows_strategy_and_fused_nodes() -> None:
    report = xpu_lite.explain(lambda x: torch.softmax(x, -1), torch.randn(4, 20), dynamic=True)
    rows = {node: reason for _, node, _, _, reason in report.rows()}
    assert set(rows) == {"amax", "sub", "exp", "sum_1", "div"}
    for reason in rows.values():
        assert "in kernel_0 (5 nodes; reduces" in reason and "persistent when <= 1024, else looped" in reason
    (graph,) = report.graphs
    assert any("def kernel_0_softmax_persistent(" in k for k in graph.kernels)
    assert any("def kernel_0_softmax_looped(" in k for k in graph.kernels)


def test_a_looped_kernel_falls_back_where_the_interpreter_cannot_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Triton before 3.9 with numpy 2.4 cannot run `range(0, rnumel, RBLOCK)` interpreted
    (runtime.interpreter_loop_problem): a kernel with that loop then runs eagerly with the
    probe's reason (strict raises it) instead of failing inside the wrapper at its first
    launch; a kernel without a loop (a pointwise chain: a reduction always has a looped
    variant) still compiles."""
    from xpu_lite import runtime
    from xpu_lite.lowering.decisions import FallbackKind

    reason = "triton 3.6.0's interpreter cannot run a loop (simulated)"
    monkeypatch.setattr(runtime, "interpreter_loop_problem", lambda: reason)
    monkeypatch.setattr(runtime, "_KERNELS", {})
    x = torch.randn(3, 40)
    with pytest.warns(UserWarning, match=r"kernel_0 failed to compile: RuntimeError: .*\(simulated\).*run eagerly"):
        report = xpu_lite.explain(lambda t: (t * 2).sum(-1), x)
    assert {d.reason.kind for d in report.graphs[0].decisions if d.reason} == {FallbackKind.KERNEL_FAILED}
    assert all(reason in d.reason.detail for d in report.graphs[0].decisions if d.reason)
    torch._dynamo.reset()
    with pytest.warns(UserWarning, match="run eagerly"):
        assert_bitwise(torch.compile(lambda t: (t * 2).sum(-1), backend="xpu_lite", dynamic=True)(x), (x * 2).sum(-1))
    torch._dynamo.reset()
    assert_bitwise(torch.compile(lambda t: t * 2 + 1, backend="xpu_lite", dynamic=True)(x), x * 2 + 1)
    assert xpu_lite.counters.kernels_compiled == 1
    torch._dynamo.reset()
    with pytest.raises(Exception, match=r"\(simulated\)"):
        torch.compile(lambda t: (t * 2).sum(-1), backend="xpu_lite", options={"strict": True})(x)


def test_the_interpreter_loop_probe_agrees_with_a_looped_reduction() -> None:
    """On this stack the probe's answer is what a looped kernel does: None and the looped
    launch runs (the CI's triton 3.9), or a reason and the kernel runs eagerly with it."""
    from xpu_lite import runtime

    runtime.interpreter_loop_problem.cache_clear()  # probed while compiling (under fake tensors)
    x = torch.randn(2, LOOPED_ROW)
    compiled = torch.compile(lambda t: t.sum(-1), backend="xpu_lite", dynamic=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = compiled(x)
    problem = runtime.interpreter_loop_problem()
    if problem is None:
        torch.testing.assert_close(out, x.sum(-1), rtol=1e-5, atol=1e-5)
        assert xpu_lite.counters.looped_launches == 1 and not caught, [str(w.message) for w in caught]
    else:
        assert_bitwise(out, x.sum(-1))
        assert any(problem in str(w.message) for w in caught), [str(w.message) for w in caught]


def test_a_row_of_one_repeated_value_has_its_exact_mean_and_no_variance(device: str) -> None:
    """var_mean's corrected two passes (lowering/reduction.py: _variance): over rows of one
    repeated value the mean is that value and the variance 0, as eager's, so layer_norm
    gives exactly its bias there. With `sum(x) / n` alone the mean missed by an ulp, and
    layer_norm multiplied that by 1 / sqrt(eps): 6e-4 at 44.0 (tools/op_chains.py seed
    1054), 0.3 at 1e4. Other rows stay within the float32 tolerance."""
    def fn(x, w, b):
        var, mean = torch.var_mean(x, -1, correction=0, keepdim=True)
        return var, mean, F.layer_norm(x, x.shape[-1:], w, b), x.std(-1)

    x = torch.randn(6, 37, device=device) * 3
    for row, value in enumerate((44.0, 1e4, -7.1, 0.1)):
        x[row] = value
    w, bias = torch.randn(37, device=device), torch.randn(37, device=device)
    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    got, want = compiled(x, w, bias), fn(x, w, bias)
    for g, e in zip(got, want):
        assert_bitwise(g[:4], e[:4])
        torch.testing.assert_close(g[4:], e[4:], rtol=1e-4, atol=1e-5)
    assert torch.equal(got[2][:4], bias.expand(4, 37))
    assert xpu_lite.counters.kernels_compiled >= 1


def test_a_correction_computed_from_an_int_argument(device: str) -> None:
    """var/std's `correction` made of a Python int under dynamic=True reaches the kernel as
    a symbol: before 2026-11-28 the variance lowering took it for a literal and the compile
    failed (TypeError: float() argument ... not 'Node'). Dynamo then guards on its value
    (a graph per value, aot_eager alike); each is a kernel, as eager within tolerance."""
    def fn(x: torch.Tensor, k: int) -> tuple[torch.Tensor, ...]:
        return (x.std(0, correction=k - 2), *torch.var_mean(x, 1, correction=k))

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    for k in (5, 6):
        x = torch.randn(8, 9, device=device)
        torch.testing.assert_close(compiled(x, k), fn(x, k), rtol=1e-5, atol=1e-6)
    assert xpu_lite.counters.fallback_nodes == 0
