"""The GPU sources, compiled by Triton's real compiler on any machine.

On cpu the kernels run under the Triton interpreter, which accepts things the compiler
does not (and the other way round). Here the models run on cpu while every kernel they
compile is captured; its "gpu" target sources (the ones xpu/cuda launch) then go through
Triton's whole cuda pipeline for an H100 (sm_90: TTIR, TTGIR, LLVM IR, PTX, cubin with
ptxas) through runtime.compile_ahead, the function load_kernel runs on a GPU. No GPU is
needed: Triton compiles for an explicit target. Intel's XPU backend is not in the PyPI
wheel, so xpu sources (the same text as cuda's) are checked through cuda only.
"""
from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F

import xpu_lite
import xpu_lite.backend
from xpu_lite import runtime
from xpu_lite.codegen.triton import kernel_signature, kernel_sources, math_table
from xpu_lite.lowering import ir
from xpu_lite.report import capture

from .test_kernels import FLOAT_OPINFOS, INT_OPINFOS, _opinfo
from .test_kernels import _samples as _pointwise_samples
from .test_reductions import CASES, LAYOUTS

triton = pytest.importorskip("triton")


def _cuda_target():
    from triton.backends.compiler import GPUTarget

    return GPUTarget("cuda", 90, 32)


def _ptxas_works() -> str | None:
    """None, or why Triton's cuda compiler cannot run here."""
    try:
        from triton.backends.nvidia.compiler import get_ptxas_version

        get_ptxas_version(90)
    except Exception as exc:  # noqa: BLE001  (any failure: say why and skip)
        return f"Triton's cuda backend or its bundled ptxas is unavailable: {type(exc).__name__}: {exc}"
    return None


_NO_CUDA_COMPILER = _ptxas_works()
pytestmark = [pytest.mark.skipif(_NO_CUDA_COMPILER is not None, reason=str(_NO_CUDA_COMPILER))]
if runtime.interpreter_loop_problem() is not None:
    # The models run on cpu first, where this interpreter cannot run looped kernels: they
    # run eagerly with a warning (runtime.interpreter_loop_problem), which pytest.ini makes
    # an error. Their sources are captured before loading, so they are compiled for cuda all
    # the same (Triton 3.6 with numpy 2.4: the H100 image of 2026-11-25).
    pytestmark.append(pytest.mark.filterwarnings("ignore:xpu_lite. kernel_\\d+ failed to compile. RuntimeError. triton"))


@pytest.fixture
def captured(monkeypatch):
    """The ir.Kernels the backend generates code for, in order."""
    kernels = []
    generate = xpu_lite.backend.kernel_sources

    def record(kernel, target):
        kernels.append(kernel)
        return generate(kernel, target)

    monkeypatch.setattr(xpu_lite.backend, "kernel_sources", record)
    return kernels


def _compile_for_cuda(kernels, index_spans=(0,)) -> None:
    """Compile every gpu source of every kernel (a reduction has two) to a cubin, with
    int32 indexing (span 0) and, where asked, int64 (span 2**31)."""
    assert kernels, "nothing was lowered to a kernel: the test would check nothing"
    for kernel in kernels:
        for name, source in kernel_sources(kernel, "gpu").items():
            jit = triton.jit(runtime.kernel_function(name, source))
            for span in index_spans:
                try:
                    compiled = runtime.compile_ahead(jit, kernel_signature(kernel), _cuda_target(), span,
                                                     checks_bounds=kernel.checks_bounds, ordered=kernel.ordered)
                except Exception as exc:
                    raise AssertionError(f"{name} (fused {', '.join(kernel.nodes)}, index span {span}) does not "
                                         f"compile for cuda:\n{source}") from exc
                assert compiled.asm["cubin"] and ".entry " + name in compiled.asm["ptx"]


def _run(fn, *args, backward: bool = False) -> None:
    torch._dynamo.reset()
    out = torch.compile(fn, backend="xpu_lite", dynamic=True)(*args)
    if backward:
        out.sum().backward()


def test_pointwise_op_kernels_compile_for_cuda(captured) -> None:
    """One sample of every pointwise OpInfo op: float32, bfloat16 (computed in fp32, rounded
    on store), float16 for the activations, int64 for the integer ops."""
    cases = [(n, v, torch.float32) for n, v in FLOAT_OPINFOS] + [(n, v, torch.int64) for n, v in INT_OPINFOS]
    cases += [(n, v, torch.bfloat16) for n, v in FLOAT_OPINFOS[:12]]
    cases += [(n, v, torch.float16) for n, v in FLOAT_OPINFOS if n.startswith("nn.functional")]
    for name, variant, dtype in cases:
        op = _opinfo(name, variant)
        for sample in _pointwise_samples(op, "cpu", dtype, 1):
            _run(lambda x, *args: op(x, *args, **sample.kwargs), sample.input, *sample.args)
    assert len(captured) >= len(cases) - 2, "nearly every op lowers to a kernel"
    _compile_for_cuda(captured)


def test_view_and_broadcast_kernels_compile_for_cuda(captured) -> None:
    def views(x, y):
        a = x.t()[::2] * 2 + y.unsqueeze(-1)  # transpose, step slice, broadcast
        b = x.reshape(-1, 2).permute(1, 0).sigmoid()  # computed sizes
        return a.expand(2, *a.shape).sum(0), b, torch.where(x > 0, x, torch.full_like(x, 0.5)).to(torch.float16)

    from .test_kernels import _strided_views

    _run(views, torch.randn(6, 8), torch.randn(4))
    _run(_strided_views, torch.randn(7, 5, 5).permute(2, 1, 0), torch.randn(11))  # diagonal, unfold, as_strided: min sizes
    assert len(captured) >= 6
    _compile_for_cuda(captured, index_spans=(0, 2**31))


def test_small_integer_kernels_compile_for_cuda(captured) -> None:
    """uint8/int8/int16 pointers (*u8, *i8, *i16) read as int32 by casts and comparisons, and
    results of those dtypes: wrapped (shifts, masks) and stored by a truncating cast; bit
    shifts with eager's rule for amounts outside [0, bits)."""
    read = lambda x, y, z: ((x.float() / 255.0).half(), x > -1, y.to(torch.int64) + 1, z == 3,  # noqa: E731
                            torch.maximum(x * 3 - 7, x), (~y).abs() + y, (z * z).clamp(min=-3), (x.float() * 1.5).to(torch.uint8),
                            (x >> 4) & 0xF, z << y, y.int() >> 33)
    _run(read, torch.randint(0, 256, (4, 6), dtype=torch.uint8), torch.randint(-128, 128, (4, 6), dtype=torch.int8),
         torch.randint(-9, 9, (4, 6), dtype=torch.int16))
    assert {b.dtype for k in captured for b in k.inputs} >= {torch.uint8, torch.int8, torch.int16}
    assert {b.dtype for k in captured for b in k.outputs} >= {torch.uint8, torch.int8, torch.int16}
    _compile_for_cuda(captured, index_spans=(0, 2**31))


def test_integer_power_helper_compiles_for_cuda(captured) -> None:
    """An integer to a tensor's power calls the source's @triton.jit helper (a static_range
    over the exponent's bits), from a pointwise kernel and from a reduction's (persistent
    and looped), in int64 and in the int32 small dtypes compute in."""
    _run(lambda b, e: (b ** e, 2 ** e.to(torch.int8)), torch.randint(-9, 9, (4, 6)), torch.randint(-3, 70, (4, 6)))
    _run(lambda b, e: (b ** e).sum(-1), torch.randint(-9, 9, (4, 6)), torch.randint(-3, 70, (4, 6)))
    sources = [source for k in captured for source in kernel_sources(k, "gpu").values()]
    assert len(sources) == 3 and all("@triton.jit\ndef _integer_power(" in source for source in sources), sources
    # the helper's loop counts a constexpr's bits: on cpu no interpreter's trouble with runtime bounds
    (pointwise,) = kernel_sources(captured[0], "interpreter").values()
    assert "def _integer_power(" in pointwise and not runtime._RUNTIME_LOOP.search(pointwise)
    _compile_for_cuda(captured, index_spans=(0, 2**31))


def test_complex_product_kernels_compile_for_cuda(captured) -> None:
    """torchtitan's rotary embedding of complex freqs_cis, forward and backward: products of
    float pairs placed by a cat (decomp/complex_mul.py, lowering/complex_pairs.py)."""
    from .test_complex import rope

    freqs_cis = torch.polar(torch.ones(16, 4), torch.randn(16, 4))
    _run(rope, torch.randn(2, 5, 3, 8, requires_grad=True), freqs_cis, backward=True)
    assert len(captured) == 2 and all(any(n.startswith("cat") for n in k.nodes) for k in captured), [k.nodes for k in captured]
    _compile_for_cuda(captured, index_spans=(0, 2**31))


def test_comparison_and_division_kernels_compile_for_cuda(captured) -> None:
    """Comparisons in the operands' common dtype (float16's 0.1, an int32 compared with a
    size plus 2**32: the size arguments' int64 casts) and integer division by a tensor with
    no 0, the -1 guard of int64 included."""
    compare = lambda h, i, n: (h == 0.1, h * 3 > 1.1, (h * 2e5).isinf(), i < i.shape[0] + 2**32,  # noqa: E731
                               i == n, n // n.clamp(min=1), n % torch.where(n == 0, 1, n), i // i.clamp(max=-2))
    _run(compare, torch.randn(4, 6).half(), torch.randint(-9, 9, (4, 6), dtype=torch.int32),
         torch.randint(-9, 9, (4, 6)))
    assert len(captured) >= 1
    _compile_for_cuda(captured, index_spans=(0, 2**31))


def test_indirect_load_kernels_compile_with_their_bounds_assert(captured) -> None:
    """embedding, gather, index_select, x[:, i] and x[i, j] with int32 and int64 indexing; the
    assert survives compilation (Triton drops tl.device_assert unless debug is on)."""
    from .test_gather import _inputs, lookups

    _run(lookups, *_inputs(3, "cpu"))
    _run(lambda x, i, j: (x[i, j], x[i, :, j]), torch.randn(4, 5, 6), torch.tensor([0, -1]), torch.tensor([[2], [4]]))
    checking = [k for k in captured if k.checks_bounds]
    assert len(checking) == 7, [k.nodes for k in captured]
    _compile_for_cuda(captured, index_spans=(0, 2**31))
    for kernel in checking:
        _ptx_with_assert(kernel)


def _ptx_with_assert(kernel) -> str:
    """The PTX of a bounds-checking kernel, whose assert must survive compilation."""
    (name, source), = kernel_sources(kernel, "gpu").items()
    jit = triton.jit(runtime.kernel_function(name, source))
    ptx = runtime.compile_ahead(jit, kernel_signature(kernel), _cuda_target(), checks_bounds=True).asm["ptx"]
    assert "__assertfail" in ptx, f"{name}: the bounds assert was compiled out"
    return ptx


def test_scatter_kernels_compile_with_their_atomics_and_bounds_assert(captured) -> None:
    """index_put (accumulate or not, a None dim), scatter (src, value) and scatter_add, in
    float32 and float16 (tl.atomic_add of halves), int32 and int64 indexing; scatter_reduce's
    atomic maxima and minima of float32 (integer atomics on the bits) and int64."""
    from .test_scatter import _inputs, scatters

    _run(scatters, *_inputs(7, "cpu"))
    _run(lambda x, i, v: x.index_put([i], v, accumulate=True), torch.randn(5, 3).half(), torch.tensor([0, 0]),
         torch.randn(2, 3).half())
    extrema = lambda x, i, v: (x.scatter_reduce(0, i, v, "amax"), x.scatter_reduce(0, i, v, "amin"))  # noqa: E731
    _run(extrema, torch.randn(5, 3), torch.tensor([[0, 1, 0]]), torch.randn(1, 3))
    _run(extrema, torch.arange(15).view(5, 3), torch.tensor([[0, 1, 0]]), torch.arange(3).view(1, 3))
    scattering = [k for k in captured if any(s.bounds for s in k.stores)]
    assert len(scattering) == 11, [k.nodes for k in captured]
    _compile_for_cuda(captured, index_spans=(0, 2**31))
    for kernel in scattering:
        ptx = _ptx_with_assert(kernel)
        if any(s.accumulate for s in kernel.stores):
            assert re.search(r"\b(atom|red)\.", ptx), f"{kernel.name}: no atomic in the PTX"


@pytest.mark.parametrize("case", list(CASES))
def test_reduction_kernels_compile_for_cuda(case: str, captured) -> None:
    """Persistent and looped sources of every reduction op and normalization, with int32
    and int64 indexing."""
    _run(CASES[case], torch.randn(3, 36))
    assert any(k.is_reduction for k in captured)
    _compile_for_cuda(captured, index_spans=(0, 2**31))


def test_scan_kernels_compile_for_cuda(captured) -> None:
    """cumsum and cumprod (tl.cumsum/tl.cumprod, after a per-row carry when looped), fused
    with a softmax, in float32, float16 (accumulated in float32), int64 and bool; cummax and
    cummin (folds of an ordered kernel, RBLOCK 1) in bfloat16 and int32; logcumsumexp's fold
    (a double carry, as under the interpreter) in float32 and float16."""
    x, m = torch.randn(4, 40), torch.randint(-5, 5, (4, 40))
    _run(lambda x, m: ((x.cumsum(-1) * x.softmax(-1)).cumprod(-1), x.half().cumsum(0), m.cumsum(-1), (m > 0).cumprod(0),
                       torch.cummax(x.bfloat16(), -1), torch.cummin(m.int(), 0), torch.logcumsumexp(x, 0),
                       torch.logcumsumexp(x.half(), -1)), x, m)
    gpu = [source for k in captured if k.ordered for source in kernel_sources(k, "gpu").values()]
    assert any("lse" in source for source in gpu), gpu
    assert all(("tl.float64" in source) == ("lse" in source) for source in gpu), gpu  # only the carry
    assert any(isinstance(v, ir.Scan) for k in captured for v in k.values)
    assert any(k.ordered for k in captured)
    _compile_for_cuda(captured, index_spans=(0, 2**31))


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_strided_reduction_kernels_compile_for_cuda(layout: str, captured) -> None:
    _run(LAYOUTS[layout], torch.randn(12, 6))
    _compile_for_cuda(captured)


@pytest.mark.parametrize("name,fn", [
    ("softmax", lambda x, w: torch.softmax(x, -1)),
    ("log_softmax", lambda x, w: F.log_softmax(x, -1)),
    ("layer_norm", lambda x, w: F.layer_norm(x, (64,), w, w)),
    ("rms_norm", lambda x, w: F.rms_norm(x, (64,), w, 1e-6)),
])
def test_backward_kernels_compile_for_cuda(name: str, fn, captured) -> None:
    _run(fn, torch.randn(6, 64, requires_grad=True), torch.randn(64, requires_grad=True), backward=True)
    assert len(captured) >= 2, f"{name}: a forward and a backward kernel"
    _compile_for_cuda(captured)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int64, torch.bool], ids=str)
def test_low_precision_and_integer_reductions_compile_for_cuda(dtype: torch.dtype, captured) -> None:
    x = (torch.randn(4, 40) * 4).to(dtype)
    if dtype.is_floating_point:
        _run(lambda x: (torch.softmax(x, -1), F.layer_norm(x, (40,)), x.sum(-1), x.amax(0)), x)
    elif dtype is torch.bool:
        _run(lambda x: (x.sum(-1), x.any(-1), x.all(0), x.logical_not().amax(-1)), x)
    else:
        _run(lambda x: (x.sum(-1), x.prod(0), x.argmax(-1), x.any(-1)), x)
    _compile_for_cuda(captured)


# -- load_kernel on a GPU: compile errors surface at load, where the backend falls back --
_BAD = '''import triton.language as tl


def bad(in0, out0, xnumel, XBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, 3)  # not a power of two: Triton refuses
    tl.store(out0 + xindex, tl.load(in0 + xindex))
'''


def test_gpu_load_kernel_compiles_ahead_so_errors_surface_at_load(monkeypatch) -> None:
    """load_kernel's xpu/cuda branch, with the current device's target replaced by sm_90:
    a source Triton refuses raises from load_kernel (compile_kernels turns that into a
    fallback with a warning, tested in test_kernels) instead of at first launch."""
    monkeypatch.setattr(runtime, "current_target", _cuda_target)
    signature = {"in0": "*fp32", "out0": "*fp32", "xnumel": "i32", "XBLOCK": "constexpr"}
    with pytest.raises(triton.compiler.errors.CompilationError, match="arange"):
        runtime.load_kernel("bad", _BAD, "cuda", signature)
    good = _BAD.replace("tl.arange(0, 3)", "tl.arange(0, XBLOCK)").replace("def bad", "def good")
    kernel = runtime.load_kernel("good", good, "cuda", signature)
    assert isinstance(kernel, triton.runtime.jit.JITFunction)


@pytest.mark.parametrize("name,fn", [
    ("broadcast pointwise", lambda x, y: (x * 2 + y).relu()),
    ("bfloat16 pointwise", lambda x, y: (x.bfloat16() + 1).float()),
    ("softmax", lambda x, y: torch.softmax(x, -1)),
    ("layer_norm", lambda x, y: F.layer_norm(x, x.shape[-1:])),
    ("outer sum", lambda x, y: x.sum(0)),
])
def test_aligned_contiguous_kernels_use_128_bit_loads(name: str, fn, captured) -> None:
    """What a GPU's bandwidth depends on, checked statically: launched on 16-byte aligned
    tensors with sizes divisible by 16 (Triton's JIT specializes on that), kernels over
    contiguous rows load with ld.global.v4 in both reduction strategies. A change to the
    index expressions that hides contiguity from Triton's analysis fails here."""
    _run(fn, torch.randn(8, 32), torch.randn(32))
    assert captured
    for kernel in captured:
        for variant, source in kernel_sources(kernel, "gpu").items():
            jit = triton.jit(runtime.kernel_function(variant, source))
            ptx = runtime.compile_ahead(jit, kernel_signature(kernel), _cuda_target(), aligned=True).asm["ptx"]
            assert "ld.global.v4." in ptx, f"{name}: {variant} loads scalars:\n{source}"


@pytest.mark.parametrize("name,fn", [
    ("transposing copy", lambda x: x.t().contiguous()),
    ("nhwc to nchw", lambda x: x.view(2, 4, 4, 8).permute(0, 3, 1, 2).contiguous() * 2),
    ("transposing copy, bf16", lambda x: x.bfloat16().t().contiguous()),
])
def test_tiled_transposes_load_and_store_128_bits(name: str, fn, captured) -> None:
    """A flat kernel reading a transpose loads one scalar per lane (strided); the tiled
    kernel loads along the read's contiguous dim and stores along the write's, both as
    128-bit vectors, with Triton transposing each tile through shared memory."""
    _run(fn, torch.randn(8, 32))
    kernels = [k for k in captured if k.tile is not None]
    assert kernels, f"{name}: not tiled"
    for kernel in kernels:
        (source,) = kernel_sources(kernel, "gpu").values()
        jit = triton.jit(runtime.kernel_function(kernel.function, source))
        ptx = runtime.compile_ahead(jit, kernel_signature(kernel), _cuda_target(), aligned=True).asm["ptx"]
        assert "ld.global.v4." in ptx and "st.global.v4." in ptx, f"{name}: scalar loads or stores:\n{source}"
        assert "st.shared" in ptx  # the tile changes layout through shared memory
    _compile_for_cuda(kernels, index_spans=(0, 2**31))


def test_gpu_division_and_sqrt_are_correctly_rounded_and_libdevice_links(captured) -> None:
    """Eager's division and sqrt are IEEE; Triton's `/` and tl.sqrt are not on cuda
    (div.full.f32, sqrt.approx.ftz.f32), which could move a floor/trunc division or a
    remainder by one, and a compiled float % is a - trunc(a / b) * b (1.0 % 0.1 would be
    negative). The gpu sources use div_rn/sqrt_rn, and libdevice for the functions eager
    takes from the C library (fmod included; linked into the PTX)."""
    def fn(x, y):
        return (x / y, x.abs().sqrt(), torch.div(x, y, rounding_mode="floor"), torch.tanh(x), torch.expm1(x),
                torch.log1p(x.abs()), torch.tan(x), x.round(), x.trunc(), x.abs().pow(y), F.gelu(x, approximate="tanh"),
                torch.sigmoid(x), F.silu(x), torch.fmod(x, y), torch.remainder(x, y))

    _run(fn, torch.randn(8, 16), torch.rand(8, 16) + 0.5)
    (kernel,) = captured
    (source,) = kernel_sources(kernel, "gpu").values()
    for call in ("tl.div_rn(", "tl.sqrt_rn(", "libdevice.tanh(", "libdevice.expm1(", "libdevice.log1p(", "libdevice.tan(",
                 "libdevice.rint(", "libdevice.trunc(", "libdevice.pow(", "libdevice.fmod("):
        assert call in source, call
    jit = triton.jit(runtime.kernel_function(kernel.function, source))
    ptx = runtime.compile_ahead(jit, kernel_signature(kernel), _cuda_target()).asm["ptx"]
    assert "div.rn.f32" in ptx and "sqrt.rn.f32" in ptx
    assert "div.full.f32" not in ptx and "sqrt.approx" not in ptx


def test_gpu_math_is_float32_where_the_interpreter_rounds_from_float64(captured) -> None:
    """The interpreter evaluates most functions in float64, rounded once (mathfns); Intel
    Arc GPUs have no fp64 and eager's gpu kernels compute in float32, so every entry of the
    gpu column is float32 (digamma's reflection apart: in double, as eager's cuda kernel),
    and a kernel of such functions has none and compiles for sm_90."""
    def text(entry) -> str:
        return entry if isinstance(entry, str) else " ".join(e for _, e in entry.steps) + entry.result

    assert {op for op, e in math_table("gpu").items() if "float64" in text(e)} == {"digamma"}
    in_double = {op for op, e in math_table("interpreter").items() if "float64" in text(e)}
    assert {"exp", "log", "sin", "tan", "tanh", "expm1", "atan", "atan2", "sinh", "erfc", "elu", "pow"} <= in_double

    def fn(x):
        return (x.exp(), x.log(), x.sin(), x.cos(), x.exp2(), x.log2(), x.tanh(), F.elu(x), torch.atan(x), torch.sinh(x),
                torch.erfc(x), x.sigmoid(), x.abs() ** 1.7)

    _run(fn, torch.randn(8, 16))
    (kernel,) = captured
    (source,) = kernel_sources(kernel, "gpu").values()
    assert "float64" not in source, source
    jit = triton.jit(runtime.kernel_function(kernel.function, source))
    assert runtime.compile_ahead(jit, kernel_signature(kernel), _cuda_target()).asm["ptx"]  # libdevice's own
    # argument reductions use doubles (sinf's Payne-Hanek path), as in eager's kernels


def test_math_functions_are_libdevice_calls_on_gpu(captured) -> None:
    """On a gpu the inverse trigonometric and hyperbolic functions, log10, atan2 and hypot
    are the libdevice functions eager's kernels call (asinf, ...), not the interpreter's
    compositions (whose Steps lines a gpu source must not have); fmax/fmin are maxnum/minnum
    (max.f32 on cuda, as eager's fmaxf: +0.0 over -0.0); copysign and signbit are the same
    bit-exact forms on both targets. The source compiles and links."""
    unary = ("asin", "acos", "atan", "asinh", "acosh", "atanh", "sinh", "cosh", "log10", "erfc", "erfinv", "lgamma")

    def fn(x, y):
        return (*[getattr(torch, name)(x) for name in unary], torch.atan2(x, y), torch.hypot(x, y), torch.fmax(x, y),
                torch.fmin(x, y), torch.copysign(x, y), torch.signbit(x))

    _run(fn, torch.randn(8, 16), torch.randn(8, 16))
    (kernel,) = captured
    (source,) = kernel_sources(kernel, "gpu").values()
    for name in (*unary, "atan2", "hypot"):
        assert f"libdevice.{name}(" in source, name
    assert "tl.maximum(" in source and "tl.minimum(" in source, source
    assert not re.search(r"tmp\d+_\w+ = ", source), source
    jit = triton.jit(runtime.kernel_function(kernel.function, source))
    compiled = runtime.compile_ahead(jit, kernel_signature(kernel), _cuda_target())
    assert compiled.asm["cubin"] and not re.search(r"\.extern \.func.*__nv_", compiled.asm["ptx"]), "unlinked libdevice"


def test_digamma_is_eagers_float32_algorithm_on_gpu(captured) -> None:
    """libdevice has no digamma or trigamma: on a gpu they are eager's own cuda algorithms
    (Cephes' psi, named lines) in float32 with IEEE division, libdevice's sin and log, and
    digamma's reflection in double as eager's (-pi / tan(pi * r) of a double fraction: in
    float32 it is 5% off next to a pole, 88912 ulps on an H100); the interpreter's run in
    float64."""
    _run(lambda x: torch.digamma(x) + torch.polygamma(1, x), torch.randn(8, 16))
    (kernel,) = captured
    (source,) = kernel_sources(kernel, "gpu").values()
    assert "libdevice.tan(3.141592653589793 * tmp1_r)" in source and "libdevice.sin(" in source, source
    assert re.search(r"tmp1_r = \(.*\)\.to\(tl\.float64\)", source) and "tmp1_x = tmp0.to(tl.float32)" in source, source
    assert "libdevice.log(tmp1_v10)" in source and not re.search(r"\b1\.0 / \(?tmp", source), source  # div_rn
    assert "tmp1_v10 = " in source and "tmp2_v6 = " in source, source
    assert "tl.float64" in next(iter(kernel_sources(kernel, "interpreter").values()))
    _compile_for_cuda(captured)


def test_a_float_negation_is_a_sign_flip_on_any_triton(captured) -> None:
    """Triton 3.6 compiles a float's `-x` (and `-0.0 - x`) as `0.0 - x`: -(+0.0) was +0.0
    on the H100 (2026-11-25), for `neg` and i1e(-inf). On a gpu a float is negated as
    `x * -1.0` (exact; LLVM's fneg, an xor of the sign bit in 3.6's PTX); an int's stays
    `-x`; the interpreter's is `-x` (numpy's negative)."""
    _run(lambda x, m: (-x, torch.special.i1e(x), -m), torch.randn(8, 16), torch.randint(-5, 5, (8, 16)))
    sources = [s for k in captured for s in kernel_sources(k, "gpu").values()]
    assert any("(tmp0 * -1.0))  # neg" in s for s in sources) and any("_m * -1.0)" in s for s in sources), sources
    assert any(re.search(r"= \(-tmp\d+\)  # neg_1", s) for s in sources), sources  # the int one
    interpreter = [s for k in captured for s in kernel_sources(k, "interpreter").values()]
    assert not any("* -1.0" in s for s in interpreter), interpreter
    _compile_for_cuda(captured)


def test_bessel_functions_are_eagers_float32_series_on_gpu(captured) -> None:
    """i0, i0e, i1 and i1e on a gpu: eager's cuda kernels' float32 Chebyshev series (i1e's
    17 + 7 float coefficients), libdevice's exp, exp(x) times the series over sqrt(x) as
    eager's (exp(x / 2) twice was 5 ulps off on an H100), no float64; the interpreter's sum
    the double coefficients in float64."""
    _run(lambda x: (torch.i0(x), torch.special.i0e(x), torch.special.i1(x), torch.special.i1e(x)), torch.randn(8, 16))
    (kernel,) = captured
    (source,) = kernel_sources(kernel, "gpu").values()
    assert "tl.float64" not in source and "libdevice.exp(0.5 * " not in source and "tl.sqrt_rn(" in source, source
    assert re.search(r"tl\.div_rn\(libdevice\.exp\(tmp\d+_x\) \* tmp\d+_cb, tl\.sqrt_rn\(tmp\d+_x\)\)", source), source
    for fn, (small, large) in {"i0": (30, 25), "special_i0e": (30, 25), "special_i1": (29, 25), "special_i1e": (17, 7)}.items():
        value = re.search(rf"^\s*(tmp\d+) = .*# {fn}$", source, re.M)
        assert value, (fn, source)
        name = value.group(1)
        assert f"{name}_a{small - 1} = " in source and f"{name}_a{small} = " not in source, (fn, source)
        assert f"{name}_b{large - 1} = " in source and f"{name}_b{large} = " not in source, (fn, source)
    assert "tl.float64" in next(iter(kernel_sources(kernel, "interpreter").values()))
    _compile_for_cuda(captured)


def test_host_scalar_arguments_compile_for_cuda(captured) -> None:
    """A 0-dim host float tensor read by value (a float32 argument, ir.Buffer.by_value) in a
    pointwise, a reduction and a tiled kernel, in float32 and bfloat16."""
    s = torch.tensor(0.5)
    _run(lambda x, s: (x * s, (x * s).amax(-1), x.t().contiguous() * s, x.bfloat16() * s.bfloat16()), torch.randn(6, 40), s)
    assert len(captured) >= 3 and all(any(b.by_value for b in k.inputs) for k in captured), [k.inputs for k in captured]
    _compile_for_cuda(captured)


def test_window_placing_and_scalar_argument_kernels_compile_for_cuda(captured) -> None:
    """Pooling windows (values and int64 indices, 2-D and 3-D) and their backward, repeat, setitem's
    copy, and batch norm's backward, whose SymFloat operand is an fp32 kernel argument."""
    from .test_indexing import _setitems, placements
    from .test_pooling import backward_pools, pools, pools_1d, pools_3d

    _run(pools, torch.randn(2, 3, 7, 8).to(torch.bfloat16))
    _run(pools_1d, torch.randn(2, 3, 9))
    _run(lambda x: sum(out.sum() for out in backward_pools(*[x] * 6)),
         torch.randn(2, 3, 7, 8).to(torch.bfloat16).requires_grad_(), backward=True)
    backward = {n.rstrip("_0123456789") for k in captured for n in k.nodes if "backward" in n}
    assert backward >= {"max_pool2d_with_indices_backward", "avg_pool2d_backward"}, backward
    _run(lambda x: sum(out.sum() for out in pools_3d(*[x] * 5) if out.is_floating_point()),
         torch.randn(1, 2, 5, 6, 4).to(torch.bfloat16).requires_grad_(), backward=True)
    backward = {n.rstrip("_0123456789") for k in captured for n in k.nodes if "backward" in n}
    assert backward >= {"max_pool3d_with_indices_backward", "avg_pool3d_backward"}, backward
    _run(placements, torch.randn(5, 6), torch.randn(5, 4), torch.randn(6))
    _run(_setitems, torch.randn(4, 4), torch.randn(3).half(), torch.tensor(2.0))
    bn = torch.nn.BatchNorm2d(3)
    _run(bn, torch.randn(4, 3, 5, 5, requires_grad=True), backward=True)
    assert any(kind == "fp32" for k in captured for kind in kernel_signature(k).values())
    _compile_for_cuda(captured)


def test_kernels_computing_a_producer_where_they_gather_it_compile_for_cuda(captured) -> None:
    """Rotary embeddings forward and backward, and placing ops and a pool reading
    producers they compute where they read them (inlining.inlined_producers): masked
    recomputation, a half producer rounded before cat promotes it, slices of slices, a
    mask known while building along a size-1 dim."""
    from .test_indexing import placed_producers, rotary_embedding

    with capture() as reports:
        _run(rotary_embedding, torch.randn(2, 5, 8, requires_grad=True), torch.randn(5, 8), torch.randn(5, 8), backward=True)
        _run(placed_producers, torch.randn(5, 1).abs(), torch.randn(1, 4), torch.randn(5, 4).half(), torch.randn(2, 4))
        _run(lambda x: F.avg_pool2d(x * 2 + 1, 3, stride=2, padding=1), torch.randn(1, 2, 7, 5))
        _run(lambda x: torch.slice_scatter(torch.zeros_like(x), x * 2, 1, 0, None, 2), torch.randn(3, 1, 4))
    computing = [sum("computed where" in d.kernel for d in r.decisions) for r in reports]
    assert len(computing) == 5 and all(computing), computing  # rotary forward and backward, then one graph each
    _compile_for_cuda(captured, index_spans=(0, 2**31))


def test_kernels_computing_a_placing_op_where_another_gathers_it_compile_for_cuda(captured) -> None:
    """llama's key rotary inside its cache's cat, a pad of a cat, a cat of a flip of a pad:
    the inner placing op's conditions and loads at the reader's coordinates, under its mask."""
    from .test_indexing import PLACED_IN_PLACING

    for fn in PLACED_IN_PLACING.values():
        _run(fn, torch.randn(2, 4, 5, 8), torch.randn(2, 4, 2, 8), torch.randn(5, 8), torch.randn(5, 8))
    assert len(captured) == len(PLACED_IN_PLACING), [k.name for k in captured]
    _compile_for_cuda(captured)


def test_reduction_and_scan_kernels_with_a_placing_prologue_compile_for_cuda(captured) -> None:
    """cat, pad, flip and repeat computed per element in a reduction's or scan's kernel:
    coordinates and masked loads in both the persistent and the looped source."""
    from .test_reductions import PROLOGUES

    for fn in PROLOGUES.values():
        _run(fn, torch.randn(3, 5), torch.randn(3, 4))
    _run(lambda x: (x * 2).cumsum(-1), torch.randn(3, 6, requires_grad=True), backward=True)
    assert all(k.rnumel is not None for k in captured[:len(PROLOGUES)])
    _compile_for_cuda(captured)


def test_reduction_kernels_with_a_lookup_prologue_compile_with_their_bounds_assert(captured) -> None:
    """embedding, gather, index_select and indexing computed in a reduction's pass: the
    positions' loads, the assert (compiled with Triton's debug on) and the indirect load,
    in the persistent and the looped source."""
    from .test_gather import LOOKUPS_BEFORE_REDUCTIONS

    for fn in LOOKUPS_BEFORE_REDUCTIONS.values():
        _run(fn, torch.randn(5, 6), torch.tensor([[4, 0, 2], [1, 1, 3]]), torch.randint(0, 6, (5, 6)))
    assert len(captured) == len(LOOKUPS_BEFORE_REDUCTIONS) and all(k.rnumel is not None and k.checks_bounds for k in captured)
    _compile_for_cuda(captured)


def test_adaptive_pool_kernels_compile_for_cuda(captured) -> None:
    """Adaptive pools and their backward: reductions whose rows are windows of symbolic
    length, with masked loads and int64 coordinates: the max's two sources (its index in a
    second pass when looped), and the sums' looped source with RBLOCK 1 (ordered), with
    int32 and int64 indexing."""
    from .test_adaptive_pooling import adaptive_pools, backward_pools

    _run(adaptive_pools, torch.randn(2, 3, 7, 8).to(torch.bfloat16))
    _run(lambda x: sum(out.sum() for out in backward_pools(*[x] * 6)),
         torch.randn(2, 3, 7, 8).requires_grad_(), backward=True)
    nodes = {n.rstrip("_0123456789") for k in captured for n in k.nodes}
    assert nodes >= {"adaptive_max_pool2d", "_adaptive_avg_pool2d", "adaptive_max_pool2d_backward",
                     "_adaptive_avg_pool2d_backward", "adaptive_max_pool3d_backward", "_adaptive_avg_pool3d_backward"}, nodes
    assert any(k.ordered for k in captured) and not all(k.ordered for k in captured)
    _compile_for_cuda(captured, index_spans=(0, 2**31))


@pytest.mark.parametrize("dtype,rounding", [(torch.float16, "cvt.rn.f16.f32"), (torch.bfloat16, "cvt.rn.bf16.f32")],
                         ids=["float16", "bfloat16"])
def test_a_half_precision_cast_read_again_rounds_in_the_ptx(captured, dtype: torch.dtype, rounding: str) -> None:
    """`x - x.half().float()` (KernelBuilder.round_to): the round trip survives Triton's and
    LLVM's passes, as a rounding conversion and back, before the float32 subtraction."""
    _run(lambda x: x - x.to(dtype).float(), torch.randn(8, 16))
    (kernel,) = captured
    (name, source), = kernel_sources(kernel, "gpu").items()
    assert f".to({'tl.float16' if dtype is torch.float16 else 'tl.bfloat16'}).to(tl.float32)" in source, source
    jit = triton.jit(runtime.kernel_function(name, source))
    ptx = runtime.compile_ahead(jit, kernel_signature(kernel), _cuda_target()).asm["ptx"]
    assert rounding in ptx and "sub.f32" in ptx, ptx
