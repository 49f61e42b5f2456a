"""Sweep torch's OpInfo database through xpu_lite and compare with eager.

The test suite runs the quick form (tests/test_opinfo_lite.py: lite mode, first float32
sample, inference). This script goes further when you change the decomposition plan or a
lowering: more samples, other dtypes, training (outputs and gradients), the default mode.

    python tools/opinfo_sweep.py                          # lite, float32, 3 samples, inference
    python tools/opinfo_sweep.py --training               # + outputs and grads of a weighted sum
    python tools/opinfo_sweep.py --mode default --dtype float16 --samples 1
    python tools/opinfo_sweep.py --ops linalg.eigvalsh,addcdiv
    python tools/opinfo_sweep.py --mode default --device cuda   # kernels compiled for a GPU
    python tools/opinfo_sweep.py --mode region --training  # lite mode, each call in a compile region
    python tools/opinfo_sweep.py --mode default --samples 1 --fallbacks   # what still runs eagerly, and why
    python tools/opinfo_sweep.py --mode default --layout strided  # inputs as views of every other element
    python tools/opinfo_sweep.py --mode default --layout channels_last  # 4-d and 5-d inputs channels-last
    python tools/opinfo_sweep.py --training --autocast bfloat16   # each call under torch.autocast
    python tools/opinfo_sweep.py --mode default --unbacked        # the input's first size data-dependent
    python tools/opinfo_sweep.py --mode default --errors          # what eager refuses, refused compiled too

Lite mode must be bitwise equal (rtol = atol = 0, NaNs equal); the default mode compiles
kernels and is compared at --rtol/--atol (the Triton interpreter runs them on cpu: slow), and
so is the region mode: lite mode with the op called inside `xpu_lite.compile_region()`, whose
forward and backward ops are selected as in the default mode.
float16/bfloat16 results of the default mode are compared against a float64 reference (the
sample upcast, run eagerly): the compiled error (RMSE) may be at most 2x eager's (3x for
bfloat16), as in Inductor's tests, plus 2 ulps of the result's magnitude and atol; a kernel
computes in float32 and rounds once, eager rounds after every op, so neither equals the
other, and on a few elements eager's roundings can cancel by luck. A float32 result of
the default or region mode outside --rtol/--atol gets the same look (at most 2x eager's
error vs float64): where eager's own rounding is the difference (a layer_norm over one
element, whose exact weight gradient is 0, eager's ~1e-5, the kernels' and Inductor's 0).
With --errors, each OpInfo's error inputs (what eager refuses) must raise compiled too.
Prints one line per failure as it goes, progress every 50 ops, and a summary; exits 1 if
anything failed. Uninitialized results (empty*) are compared by metadata only. Lite-mode
values that aot_eager returns too are known (AOTAutograd's, not the eager calls'). Samples on
which eager itself raises, and samples aot_eager cannot compile either (Dynamo raises, or
aot_eager's backend fails and Dynamo runs the frame eagerly), are counted as skipped, and
so are samples where a second eager run differs from the first (cuDNN's transposed
convolutions on cuda).
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import itertools
import logging
import sys
import time
import warnings
from pathlib import Path

import torch
from torch.utils._pytree import tree_flatten, tree_map

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.input_layouts import LAYOUTS  # noqa: E402
from xpu_lite._torch_compat import guard_latency_unmeasured  # noqa: E402

UNINITIALIZED = {"empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided"}
# Differences that are not xpu_lite's, in every backend (aot_eager too): counted as "known".
# name -> (the verdict it explains, why). Strides that aot_eager returns too (AOTAutograd's
# own: a view output replayed outside the graph, a channels_last incoming gradient) are known
# for every op, with values that match (check).
KNOWN_TRAINING = {
    name: ("Tensor-likes are not", "an output that is a view of an input is replayed by AOTAutograd outside "
           "the graph; its gradient sums in another order than eager's")
    for name in ("expand", "expand_as", "broadcast_to", "broadcast_tensors")
}
# torch's derivative formulas that branch on tensor subclasses, which the fakes of a trace are
# (aot_eager gives the same differences):
KNOWN_TRAINING["masked_fill"] = ("Scalars are not", "masked_fill_backward sums the fill value's gradient as "
                                 "where(mask, grad, 0).sum() for subclasses, masked_select(mask).sum() in eager")
KNOWN_TRAINING["prod"] = ("Tensor-likes are not", "prod_backward takes its zero-safe cumprod formula for subclasses, "
                          "grad * result / input in eager")

# Under --autocast: results that aot_eager gives too (checked per sample), name -> why.
# AOTAutograd traces under autocast and runs its graph with autocast off, so an op whose own
# kernel calls other ops through the dispatcher gets autocast's casts in eager only.
KNOWN_AUTOCAST = {
    "nn.functional.bilinear": "_trilinear's kernel calls its products through the dispatcher, which autocast "
                              "casts in eager; the graph runs it with autocast off",
    "linalg.matrix_power": "its gradient: eager's autocast caches the half-precision copy of a leaf that requires grad, so "
                           "x @ x's two gradients are summed in half precision before the cast back; a trace runs with "
                           "that cache off, casts x twice and sums in float32 (aot_eager alike)",
    "linalg.pinv": "its kernel's matmuls are autocast in eager: float32 result, eager's the autocast dtype",
    "linalg.pinv.hermitian": "an empty batch's result is float32, eager's the autocast dtype",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["lite", "default", "region"], default="lite")
    parser.add_argument("--dtype", default="float32", help="a torch dtype name (float32, float16, int64, ...)")
    parser.add_argument("--samples", type=int, default=3, help="samples per op (from the first)")
    parser.add_argument("--training", action="store_true", help="also compare gradients (ops with autograd)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or xpu: where samples are made and run")
    parser.add_argument("--ops", default="", help="comma-separated OpInfo names (name or name.variant); default all")
    parser.add_argument("--rtol", type=float, default=1e-4, help="default and region mode")
    parser.add_argument("--atol", type=float, default=1e-5, help="default and region mode")
    parser.add_argument("--layout", choices=sorted(LAYOUTS), default="sample",
                        help="how each run's copy of an input tensor is laid out (_run_sample)")
    parser.add_argument("--autocast", choices=["float16", "bfloat16"],
                        help="call each op under torch.autocast(device, dtype), eager and compiled alike")
    parser.add_argument("--unbacked", action="store_true",
                        help="the first input's leading size data-dependent inside the function (an index_select "
                             "by nonzero of all ones), eager alike")
    parser.add_argument("--errors", action="store_true",
                        help="each OpInfo's error inputs instead of its samples: the compiled call must raise where "
                             "eager raises (all of them; --dtype, --samples and --training do not apply)")
    parser.add_argument("--fallbacks", action="store_true",
                        help="at the end, the eager calls of the compiled graphs by op and reason, most first")
    args = parser.parse_args(argv)
    dtype = getattr(torch, args.dtype, None)
    if not isinstance(dtype, torch.dtype):
        parser.error(f"--dtype {args.dtype!r} is not a torch dtype")
    from xpu_lite.runtime import device_available

    if not device_available(args.device):
        parser.error(f"--device {args.device!r}: no such device on this machine")

    import xpu_lite  # noqa: F401  (registers the backend)
    # Dynamo's guard builder unparses shape guards recursively; conv_transpose3d's third sample
    # has an output-size guard nested deep enough to pass Python's default limit (1000) at
    # this harness's stack depth, in every backend (aot_eager in the same place fails alike).
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 5000))
    # Backend failures are recorded per sample; Dynamo's graph-break warnings would repeat them.
    torch._logging.set_logs(dynamo=logging.ERROR)
    if args.errors:  # each error input's failing meta would be logged with its traceback
        logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)
    from torch.testing._internal.common_methods_invocations import op_db

    wanted = {name for name in args.ops.split(",") if name}
    ops = [op for op in op_db if not wanted or _name(op) in wanted or op.name in wanted]
    if wanted and not ops:
        parser.error(f"--ops: no OpInfo named {sorted(wanted)}")
    tol = (0.0, 0.0) if args.mode == "lite" else (args.rtol, args.atol)
    autocast = (args.device, getattr(torch, args.autocast)) if args.autocast else None
    counts = {"ok": 0, "failed": 0, "known": 0, "skipped": 0}
    fallbacks: collections.Counter[tuple[str, str]] | None = collections.Counter() if args.fallbacks else None
    start = time.perf_counter()
    # the thousands of compiles skip Dynamo's guard timing (xpu_lite._torch_compat)
    with guard_latency_unmeasured():
        for i, op in enumerate(ops):
            if i and i % 50 == 0:
                print(f"... {i}/{len(ops)} ops, {counts}, {time.perf_counter() - start:.0f} s", flush=True)
            if args.errors:
                for k, error_input in enumerate(_error_inputs(op, args.device)):
                    _count(counts, op, k, check_error(op, error_input.sample_input, args.mode), args.training)
                continue
            if dtype not in op.supported_dtypes(args.device) or (args.training and not op.supports_autograd):
                continue
            try:
                samples = list(itertools.islice(op.sample_inputs(args.device, dtype, requires_grad=args.training), args.samples))
            except Exception:  # noqa: BLE001  (an OpInfo that cannot make samples for this dtype)
                continue
            for k, sample in enumerate(samples):
                verdict = check(op, sample, args.mode, args.training, tol, fallbacks, args.layout, autocast, args.unbacked)
                _count(counts, op, k, verdict, args.training)
    under = (f" under autocast({args.autocast})" if args.autocast else "") + (", unbacked" if args.unbacked else "")
    what = "error inputs" if args.errors else f"{args.dtype}{under}, {'training' if args.training else 'inference'}"
    print(f"{args.mode} mode, {args.device}, {what}: {counts} over {len(ops)} ops in {time.perf_counter() - start:.0f} s")
    if fallbacks is not None:
        print(f"eager calls in the compiled graphs ({sum(fallbacks.values())}), by op and reason:")
        for (op_name, reason), n in sorted(fallbacks.items(), key=lambda item: (-item[1], item[0])):
            print(f"{n:6d}  {op_name}: {reason}")
    return 1 if counts["failed"] else 0


def _count(counts: dict[str, int], op, k: int, verdict: str | None, training: bool) -> None:
    """Counts a sample's verdict, printing the known and the failed."""
    if verdict is None:
        counts["ok"] += 1
    elif verdict.startswith("skip"):
        counts["skipped"] += 1
    elif verdict.startswith("known"):
        counts["known"] += 1
        print(f"{verdict.replace('known', f'known {_name(op)}[{k}]', 1)}", flush=True)
    elif training and verdict.startswith(KNOWN_TRAINING.get(_name(op), ("\0",))[0]):
        counts["known"] += 1
        print(f"known {_name(op)}[{k}]: {KNOWN_TRAINING[_name(op)][1]}", flush=True)
    else:
        counts["failed"] += 1
        print(f"FAIL {_name(op)}[{k}]: {verdict}", flush=True)


def _error_inputs(op, device: str) -> list:
    try:
        return list(op.error_inputs(torch.device(device)))
    except Exception:  # noqa: BLE001  (an OpInfo without error inputs, or none for this device)
        return []


def check_error(op, sample, mode: str) -> str | None:
    """None when the compiled call raises where eager raises; 'skip: ...' where eager does
    not raise (an error input of another device), 'known: ...' where aot_eager does not
    raise either."""
    from xpu_lite import compile_region

    def fn(x, *args, **kwargs):
        with compile_region() if mode == "region" else contextlib.nullcontext():
            return op.op(x, *args, **kwargs)

    def raises(compiled) -> bool:
        torch._dynamo.reset()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                _run_sample(compiled, sample, training=False)
            except Exception:  # noqa: BLE001
                return True
        return False

    if not raises(fn):
        return "skip: eager does not raise"
    if raises(torch.compile(fn, backend="xpu_lite", dynamic=True, mode=None if mode == "default" else "lite")):
        return None
    if not raises(torch.compile(fn, backend="aot_eager", dynamic=True)):
        return "known: aot_eager does not raise either"
    return "eager and aot_eager raise, the compiled call does not"


def _name(op) -> str:
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def check(op, sample, mode: str = "lite", training: bool = False, tol=(0.0, 0.0),
          fallbacks: collections.Counter[tuple[str, str]] | None = None, layout: str = "sample",
          autocast: tuple[str, torch.dtype] | None = None, unbacked: bool = False) -> str | None:
    """None when compiled equals eager, else why not ('skip: ...' when not comparable). The
    eager calls of the graphs compiled are counted into `fallbacks` by (op, reason).
    `layout`: of every run's input tensors (_run_sample); `autocast`: (device type, dtype)
    of a torch.autocast around each call (the float64 reference's inputs are not cast);
    `unbacked`: the input's leading size made data-dependent first (_unbacked)."""
    # data-dependent sizes are captured for every trace of the sample, aot_eager's included
    patch = torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True) if unbacked else contextlib.nullcontext()
    with patch:
        return _check(op, sample, mode, training, tol, fallbacks, layout, autocast, unbacked)


def _check(op, sample, mode: str, training: bool, tol, fallbacks: collections.Counter[tuple[str, str]] | None,
           layout: str, autocast: tuple[str, torch.dtype] | None, unbacked: bool) -> str | None:
    run = functools.partial(_run_sample, layout=layout)
    from xpu_lite import compile_region
    from xpu_lite.backend import xpu_lite_backend
    from xpu_lite.report import capture

    def fn(x, *args, **kwargs):
        x = _unbacked(x) if unbacked else x
        amp = torch.autocast(autocast[0], dtype=autocast[1]) if autocast else contextlib.nullcontext()
        with amp, compile_region() if mode == "region" else contextlib.nullcontext():
            return op.op(x, *args, **kwargs)

    failures: list[Exception] = []

    def backend(gm, example_inputs):
        # Dynamo turns some backend errors into a graph break and runs the graph eagerly,
        # which would then compare equal: record them.
        try:
            return xpu_lite_backend(gm, example_inputs, mode=None if mode == "default" else "lite")
        except torch._dynamo.exc.TorchDynamoException:
            raise  # restart analysis: Dynamo's control flow
        except Exception as exc:
            failures.append(exc)
            raise

    torch._dynamo.reset()
    with warnings.catch_warnings(), capture() as reports:
        warnings.simplefilter("ignore")  # deprecation notes of some ops
        try:
            expected = run(fn, sample, training)
        except Exception as exc:  # noqa: BLE001
            return f"skip: eager raises {type(exc).__name__}"
        if expected is None:
            return "skip: no output requires grad"
        try:
            actual = run(torch.compile(fn, backend=backend, dynamic=True), sample, training)
        except Exception as exc:  # noqa: BLE001
            upstream = _aot_eager_fails(fn, sample, training, run)
            if upstream and not failures:
                return f"skip: Dynamo fails in every backend ({type(exc).__name__})"
            if upstream:  # xpu_lite's backend raised, and aot_eager's fails too
                return f"skip: aot_eager fails to compile it too ({upstream})"
            return f"{type(exc).__name__}: {' | '.join(str(exc).splitlines()[:2])[:300]}"
    if fallbacks is not None:
        fallbacks.update((d.op, str(d.reason)) for r in reports for d in r.fallbacks)
    if failures:
        upstream = _aot_eager_fails(fn, sample, training, run)
        if upstream:
            return f"skip: aot_eager fails to compile it too ({upstream})"
        return f"xpu_lite failed to compile: {failures[0]!r}"[:300]
    reference = None
    if mode != "lite" and _low_precision(expected):
        try:
            reference = run(fn, _upcast(sample), training)
        except Exception as exc:  # noqa: BLE001
            return f"skip: no float64 reference (eager raises {type(exc).__name__} in float64)"
    if mode == "lite" and any(r.kernels for r in reports):
        return "lite mode without regions compiled a kernel"
    if actual is None:
        return "compiled outputs do not require grad"
    values = op.name not in UNINITIALIZED
    verdict = _compare(actual, expected, values=values, tol=tol, reference=reference)
    if verdict and mode != "lite" and reference is None and verdict.startswith(VALUE_MISMATCH):
        with contextlib.suppress(Exception):  # no float64 reference: the verdict stands
            reference = run(fn, _upcast(sample, (*FLOAT32_CLOSER, *_integer_operand(sample))), training)
            verdict = _compare(actual, expected, values=values, tol=tol, reference=reference, closer=FLOAT32_CLOSER)
    if (verdict and verdict.startswith("strides")
            and _compare(actual, _aot_eager_run(fn, sample, training, run), values=False, tol=tol) is None):
        # AOTAutograd's strides: the values decide
        strides, verdict = verdict, _compare(actual, expected, values=values, tol=tol, reference=reference, strides=False)
        if verdict is None:
            return f"known: aot_eager returns these strides too ({strides})"
    if (verdict and mode == "lite" and verdict.startswith(VALUE_MISMATCH)
            and _compare(actual, _aot_eager_run(fn, sample, training, run), values=values, tol=tol, strides=False) is None):
        return f"known: aot_eager returns these values too ({verdict[:80]})"  # AOTAutograd's, not the eager calls'
    if (verdict and autocast and _name(op) in KNOWN_AUTOCAST
            and _compare(actual, _aot_eager_run(fn, sample, training, run), values=values, tol=tol) is None):
        return f"known: {KNOWN_AUTOCAST[_name(op)]}"
    if verdict and _compare(run(fn, sample, training), expected, values=values, tol=tol, reference=reference):
        # cuDNN's transposed convolution, attention's RNG seed outputs: a second eager run differs
        return f"skip: eager is not deterministic here ({verdict[:60]})"
    return verdict


def _unbacked(x):
    """`x` with its leading size data-dependent in a trace (an unbacked symbol), the same values."""
    if not isinstance(x, torch.Tensor) or x.dim() == 0:
        return x
    return x.index_select(0, torch.ones(x.shape[0], dtype=torch.bool, device=x.device).nonzero().squeeze(1))


LOW_PRECISION = {torch.float16: 2.0, torch.bfloat16: 3.0}  # dtype -> allowed error relative to eager's
FLOAT32_CLOSER = {torch.float32: 2.0}  # a second look at a float32 mismatch, against float64
VALUE_MISMATCH = ("Tensor-likes are not", "Scalars are not")  # assert_close's verdicts on values


def _low_precision(tree) -> bool:
    return any(isinstance(t, torch.Tensor) and t.dtype in LOW_PRECISION for t in tree_flatten(tree)[0])


def _integer_operand(sample) -> tuple[torch.dtype, ...]:
    """The dtype of a unary op's integer input, which it converts to float first (i1 of an
    int64 tensor is i1 of its float32 value): upcast too, float64 is that math's reference.
    Nothing for ops of several tensors, whose integers may be indices or wrap first."""
    tensors = [t for t in tree_flatten((sample.input, sample.args, sample.kwargs))[0] if isinstance(t, torch.Tensor)]
    if len(tensors) == 1 and not tensors[0].dtype.is_floating_point and tensors[0].dtype is not torch.bool:
        return (tensors[0].dtype,)
    return ()


def _upcast(sample, dtypes=LOW_PRECISION):
    """The sample with its tensors of `dtypes` in float64 (grad requirements kept)."""
    def up(t):
        if isinstance(t, torch.Tensor) and t.dtype in dtypes:
            return t.detach().to(torch.float64).requires_grad_(t.requires_grad)
        return t
    return type(sample)(up(sample.input), args=tree_map(up, sample.args), kwargs=tree_map(up, sample.kwargs))


def _aot_eager_fails(fn, sample, training: bool, run) -> str | None:
    """Why aot_eager fails on this sample (raises, or its backend fails and Dynamo falls
    back to eager), or None when it compiles and runs."""
    from torch._dynamo.backends.registry import lookup_backend

    aot_eager, failures = lookup_backend("aot_eager"), []

    def backend(gm, example_inputs):
        try:
            return aot_eager(gm, example_inputs)
        except torch._dynamo.exc.TorchDynamoException:
            raise
        except Exception as exc:
            failures.append(exc)
            raise

    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            run(torch.compile(fn, backend=backend, dynamic=True), sample, training)
        except Exception as exc:  # noqa: BLE001
            return type(exc).__name__
    return type(failures[0]).__name__ if failures else None


def _aot_eager_run(fn, sample, training: bool, run):
    """`run` of the sample compiled by aot_eager (AOTAutograd without xpu_lite)."""
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run(torch.compile(fn, backend="aot_eager", dynamic=True), sample, training)


def _run_sample(fn, sample, training: bool, layout: str = "sample"):
    """Outputs (and, in training, input grads of a fixed weighted sum of the outputs), and
    the input tensors that do not require grad as they are afterwards: an op may update
    some in place (instance_norm's running stats), and must do so exactly once. Inputs are
    fresh copies, laid out as LAYOUTS[layout] lays them out."""
    def fresh(t):
        return LAYOUTS[layout](t.detach()).requires_grad_(t.requires_grad)

    x, args, kwargs = tree_map(lambda t: fresh(t) if isinstance(t, torch.Tensor) else t,
                               (sample.input, sample.args, sample.kwargs))
    torch.manual_seed(0)  # random ops must draw the same numbers in both runs
    out = fn(x, *args, **kwargs)
    plain = [t for t in tree_flatten((x, args, kwargs))[0] if isinstance(t, torch.Tensor) and not t.requires_grad]
    if not training:
        return out, plain
    outs = [o for o in tree_flatten(out)[0] if isinstance(o, torch.Tensor) and o.requires_grad]
    if not outs:
        return None
    gen = torch.Generator().manual_seed(1)
    # float32 draws, so a float64 reference run weighs its outputs as the low-precision run did
    loss = sum((o * torch.randn(o.shape, generator=gen).to(o.device, o.dtype)).sum() for o in outs)
    leaves = [t for t in tree_flatten((x, args, kwargs))[0] if isinstance(t, torch.Tensor) and t.requires_grad]
    return [o.detach() for o in outs], list(torch.autograd.grad(loss, leaves, allow_unused=True)), plain


def _compare(actual, expected, values: bool, tol, reference=None, closer=LOW_PRECISION, strides=True) -> str | None:
    """None if `actual` matches `expected` (in strides too, with `strides`), else why not. Tensors
    of a dtype in `closer` with a float64 `reference` are held to its error multiplier
    (_against_float64), others to tol."""
    flat_a, spec_a = tree_flatten(actual)
    flat_e, spec_e = tree_flatten(expected)
    if spec_a != spec_e:
        return f"structure {spec_a} vs {spec_e}"
    flat_r = tree_flatten(reference)[0] if reference is not None else [None] * len(flat_e)
    for a, e, r in zip(flat_a, flat_e, flat_r):
        if not isinstance(e, torch.Tensor):
            if a != e and not (a != a and e != e):
                return f"value {a!r} vs {e!r}"
            continue
        if not isinstance(a, torch.Tensor) or (a.shape, a.dtype) != (e.shape, e.dtype):
            return f"metadata {getattr(a, 'shape', a)} {getattr(a, 'dtype', '')} vs {e.shape} {e.dtype}"
        if a.layout != e.layout:
            return f"layout {a.layout} vs {e.layout}"
        if e.layout != torch.strided:  # sparse results: no strides; compare their dense values
            a, e = a.to_dense(), e.to_dense()
            r = r.to_dense() if isinstance(r, torch.Tensor) else r
        elif strides and e.numel() > 1 and _significant_strides(a) != _significant_strides(e):
            return f"strides {a.stride()} vs {e.stride()}"
        if values and isinstance(r, torch.Tensor) and e.dtype in closer:
            verdict = _against_float64(a, e, r, closer[e.dtype], tol[1])
            if verdict:
                return verdict
        elif values:
            try:
                torch.testing.assert_close(a, e, rtol=tol[0], atol=tol[1], equal_nan=True)
            except AssertionError as exc:
                return " ".join(str(exc).split())[:200]
    return None


def _significant_strides(t: torch.Tensor) -> tuple[int, ...]:
    """Strides of the dims longer than 1 (a length-1 dim's stride addresses nothing)."""
    return tuple(st for size, st in zip(t.shape, t.stride()) if size > 1)


def _against_float64(actual, expected, reference, multiplier: float, atol: float) -> str | None:
    """Compiled error (RMSE vs the float64 reference) at most multiplier x eager's, plus two
    units in the last place of the result's RMS magnitude (one or two roundings apart from
    eager's lucky ones on a few elements), plus atol. Non-finite values where eager has
    them, except a finite value where eager overflowed and the reference did not, and an
    infinity the reference rounds to in the dtype too where eager's is another non-finite
    value (NaN from its own inf - inf: `__rpow__`'s float16 gradient)."""
    a, e, r = actual.double(), expected.double(), reference.double()
    finite = a.isfinite() & e.isfinite()
    in_dtype = reference.to(expected.dtype).double()
    rescued = (a.isfinite() & ~e.isfinite() & in_dtype.isfinite()) | (a.isinf() & ~e.isfinite() & (a == in_dtype))
    lost = ~a.isfinite() & e.isfinite()
    if lost.any() or not torch.equal(a[~finite & ~rescued].nan_to_num(), e[~finite & ~rescued].nan_to_num()):
        return "non-finite values differ from eager's"
    if not finite.any():
        return None
    rms = lambda x: x.square().mean().sqrt().item()  # noqa: E731
    eager_error, error = rms(e[finite] - r[finite]), rms(a[finite] - r[finite])
    ulps = 2 * torch.finfo(expected.dtype).eps * rms(r[finite])
    if error > multiplier * eager_error + ulps + atol:
        return f"error vs float64 {error:.3g} > {multiplier} x eager's {eager_error:.3g} + 2 ulp {ulps:.2g} + {atol:g}"
    return None

if __name__ == "__main__":
    sys.exit(main())
