"""Random chains of ops through xpu_lite, against eager: what one op at a time does not show.

tools/opinfo_sweep.py checks each op alone; fused kernels meet ops in combinations: a view
of a reduction's result read by a scan, a cast read again in the same kernel. This script
draws, per seed, a chain of --length ops (pointwise, views with steps and permutes,
reductions, scans, cat/pad/flip/repeat/roll, layer_norm, index_select, dtype round trips),
compiles it with dynamic=True and runs it at three input sizes (one compilation), against
eager; with --training also the input's gradient.

    python tools/op_chains.py                                   # default mode, float32, seeds 0-49
    python tools/op_chains.py --seeds 100:30 --training
    python tools/op_chains.py --mode lite --training            # bitwise
    python tools/op_chains.py --mode region --training          # lite, every other op in a region
    python tools/op_chains.py --dtype bfloat16 --training       # against float64
    python tools/op_chains.py --seeds 34:1 --show               # one program: its ops and sources
    python tools/op_chains.py --ops wide --length 8 --training  # gathers, scatters, pools, sorts, ...
    python tools/op_chains.py --ops int --dtype uint8           # integer ops that wrap at every op

Lite mode must be bitwise equal (NaNs equal); a gradient that differs from eager's exactly
as aot_eager's does (AOTAutograd's trace: prod's and cumprod's zero-safe derivatives, the
incoming gradient strided like the output) is "known", upstream's. Region mode is lite mode
with every other op of the chain in a compile region (eager ops and kernels alternate, and in
training the min cut over the region's nodes decides what the backward recomputes); it is
judged as the default mode is. The default mode must be
within rtol = 2e-4, atol = 2e-5 of eager, or else no further from a float64 run of the same
chain than twice eager's error (opinfo_sweep's criterion): an ill-conditioned chain (the
argmax of a layer_norm's row sums, which are rounding noise) differs from eager without being
wrong. float16/bfloat16 results always take the float64 criterion. What fails that is
"known" still when it is no further from float64 than eager lands with every op's result
jittered by up to one ulp (rounding_spread): rounding the chain amplifies, not a wrong
value. Prints a line per failure and per known difference (the seed reproduces it) and a
summary; exits 1 if anything failed.
"""
from __future__ import annotations

import argparse
import contextlib
import random
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.model_check import _Jitter  # noqa: E402
from tools.opinfo_sweep import _against_float64  # noqa: E402

SIZES = ((3, 5, 4), (4, 6, 5), (5, 7, 6))
Op = Callable[[torch.Tensor], torch.Tensor]
UNARY: list[tuple[str, Op]] = [
    ("exp", lambda t: (t * 0.1).exp()), ("sigmoid", torch.sigmoid), ("tanh", torch.tanh), ("relu", F.relu),
    ("gelu", F.gelu), ("log", lambda t: (t.abs() + 1).log()), ("square", lambda t: t * t),
    ("clamp", lambda t: t.clamp(-0.5, 0.7)), ("where", lambda t: torch.where(t > 0, t, -2 * t)),
    ("neg", torch.neg), ("silu", F.silu), ("rsqrt", lambda t: (t.abs() + 0.5).rsqrt()),
    ("int32 round trip", lambda t: (t * 4).to(torch.int32).to(t.dtype)),
    ("float16 round trip", lambda t: t.half().to(t.dtype)),
]


def draw(rng: random.Random, dim: int, kind: str | None = None) -> tuple[str, Op]:
    """One op for a tensor of `dim` dims: (name, function); of `kind` where given."""
    kind = kind or rng.choice(["unary", "unary", "binary", "view", "view", "reduce", "scan", "place", "norm", "index"])
    d = rng.randrange(dim)
    if kind == "binary":
        summed, op = rng.random() < 0.5, rng.choice([torch.add, torch.mul, torch.sub, torch.maximum])
        name = f"{op.__name__} with its {'sum' if summed else 'flip'} along {d}"
        return name, lambda t: op(t, t.sum(d, keepdim=True) if summed else t.flip(d))
    if kind == "view":
        view = rng.choice(["transpose", "step", "narrow", "unsqueeze", "flatten", "permute", "expand", "select"])
        if view == "transpose" and dim >= 2:
            return "transpose", lambda t: t.transpose(0, dim - 1)
        if view == "step":
            return f"[::2] along {d}", lambda t: t[(slice(None),) * d + (slice(None, None, 2),)]
        if view == "narrow":
            return f"[1:-1] along {d}", lambda t: t[(slice(None),) * d + (slice(1, -1),)]
        if view == "unsqueeze" and dim < 4:
            at = rng.randrange(dim + 1)
            return f"unsqueeze({at})", lambda t: t.unsqueeze(at)
        if view == "flatten" and dim >= 2:
            return "flatten(0, 1)", lambda t: t.flatten(0, 1)
        if view == "permute" and dim >= 3:
            order = rng.sample(range(dim), dim)
            return f"permute{tuple(order)}", lambda t: t.permute(order)
        if view == "expand" and dim < 4:
            return "expand(2, ...)", lambda t: t.unsqueeze(0).expand(2, *t.shape)
        if view == "select" and dim >= 2:
            return "select(0, 0)", lambda t: t.select(0, 0)
        return "alias", lambda t: t
    if kind == "reduce" and dim >= 2:
        name = rng.choice(["sum", "amax", "mean", "softmax", "logsumexp", "var", "argmax", "prod"])
        reductions: dict[str, Op] = {
            "sum": lambda t: t.sum(d), "amax": lambda t: t.amax(d), "mean": lambda t: t.mean(d, keepdim=True),
            "softmax": lambda t: t.softmax(d), "logsumexp": lambda t: t.logsumexp(d),
            "var": lambda t: t.var(d, keepdim=True), "argmax": lambda t: t.argmax(d).to(t.dtype),
            "prod": lambda t: (t.tanh() * 0.5 + 1).prod(d),
        }
        return f"{name} along {d}", reductions[name]
    if kind == "scan":
        name = rng.choice(["cumsum", "cummax", "logcumsumexp", "cumprod"])
        scans: dict[str, Op] = {
            "cumsum": lambda t: t.cumsum(d), "cummax": lambda t: t.cummax(d)[0],
            "logcumsumexp": lambda t: t.logcumsumexp(d), "cumprod": lambda t: (t.tanh() * 0.3 + 1).cumprod(d),
        }
        return f"{name} along {d}", scans[name]
    if kind == "place":
        name = rng.choice(["cat", "pad", "flip", "repeat", "roll"])
        placing: dict[str, Op] = {
            "cat": lambda t: torch.cat([t, t * 2], d), "pad": lambda t: F.pad(t, (1, 2)), "flip": lambda t: t.flip(d),
            "repeat": lambda t: t.repeat(*([1] * (dim - 1) + [2])), "roll": lambda t: t.roll(1, d),
        }
        return f"{name} along {d if name in ('cat', 'flip', 'roll') else dim - 1}", placing[name]  # pad, repeat: the last dim
    if kind == "norm":
        return "layer_norm", lambda t: F.layer_norm(t, t.shape[-1:])
    if kind == "index":
        return f"index_select of every other, reversed, along {d}", \
            lambda t: t.index_select(d, torch.arange(t.shape[d] - 1, -1, -2, device=t.device))
    return rng.choice(UNARY)


def _positions(t: torch.Tensor, d: int, step: int) -> torch.Tensor:
    """An index tensor the shape of `t`: along dim `d`, position i reads (i * step + 1) % n,
    the same in every slice (from the sizes, not the data: one ulp in a value must not move
    a position); step 0 reads position 1 (or 0) everywhere, a scatter's collisions."""
    n = t.shape[d]
    shape = [1] * t.dim()
    shape[d] = n
    return ((torch.arange(n, device=t.device) * step + 1) % n).view(shape).expand(t.shape)


def draw_wide(rng: random.Random, dim: int) -> tuple[str, Op]:
    """One op of the wider vocabulary (--ops wide): gathers and scatter_adds (collisions
    too), masked fills, pools, matmuls, norms, sorts, unfold, split, tril, more binary ops
    and reductions."""
    d = rng.randrange(dim)
    kind = rng.choice(["gather", "scatter_add", "masked_fill", "pool", "matmul", "norm", "sort", "unfold", "split",
                       "tril", "binary", "reduce"])
    if kind == "gather":
        step = rng.choice([2, 3])
        return f"gather along {d}, step {step}", lambda t: t.gather(d, _positions(t, d, step))
    if kind == "scatter_add":
        step = rng.choice([0, 2])
        return f"scatter_add along {d}, step {step}", lambda t: torch.zeros_like(t).scatter_add(d, _positions(t, d, step), t)
    if kind == "masked_fill":
        return "masked_fill(t < 0, 0.5)", lambda t: t.masked_fill(t < 0, 0.5)
    if kind == "pool" and dim == 3:
        name = rng.choice(["avg_pool1d", "max_pool1d"])
        return f"{name}(2, ceil_mode)", lambda t: getattr(F, name)(t, 2, ceil_mode=True)
    if kind == "pool" and dim == 4:
        name = rng.choice(["avg_pool2d", "max_pool2d", "adaptive_avg_pool2d"])
        if name == "adaptive_avg_pool2d":
            return "adaptive_avg_pool2d(2)", lambda t: F.adaptive_avg_pool2d(t, 2)
        return f"{name}(2, 1, padding 1)", lambda t: getattr(F, name)(t, 2, 1, padding=1)
    if kind == "matmul" and dim >= 2:
        return "t @ t.mT", lambda t: t @ t.mT
    if kind == "norm":
        name = rng.choice(["normalize", "rms_norm", "norm"])
        norms: dict[str, Op] = {
            "normalize": lambda t: F.normalize(t, dim=d), "rms_norm": lambda t: F.rms_norm(t, t.shape[-1:]),
            "norm": lambda t: t.norm(dim=d, keepdim=True),
        }
        return f"{name}{'' if name == 'rms_norm' else f' along {d}'}", norms[name]
    if kind == "sort":
        name = rng.choice(["sort", "topk", "cummin"])
        sorts: dict[str, Op] = {
            "sort": lambda t: t.sort(d)[0], "topk": lambda t: t.topk(min(2, t.shape[d]), d)[0],
            "cummin": lambda t: t.cummin(d)[0],
        }
        return f"{name} along {d}", sorts[name]
    if kind == "unfold":
        return f"unfold({d}, 2, 1)", lambda t: t.unfold(d, 2, 1)
    if kind == "split":
        return f"split(2) along {d}, reversed, cat", lambda t: torch.cat(t.split(2, d)[::-1], d)
    if kind == "tril" and dim >= 2:
        return "tril", torch.tril
    if kind == "reduce" and dim >= 2:
        name = rng.choice(["std", "amin", "argmin", "max", "any"])
        reductions: dict[str, Op] = {
            "std": lambda t: t.std(d), "amin": lambda t: t.amin(d, keepdim=True), "argmin": lambda t: t.argmin(d).to(t.dtype),
            "max": lambda t: t.max(d)[0], "any": lambda t: (t > 0.5).any(d).to(t.dtype) + t.sum(d),
        }
        return f"{name} along {d}", reductions[name]
    name, op = rng.choice([("atan2", torch.atan2), ("lerp 0.3", lambda a, b: torch.lerp(a, b, 0.3)),
                           ("addcmul", lambda a, b: torch.addcmul(a, a, b, value=0.5)), ("hypot", torch.hypot),
                           ("minimum", torch.minimum), ("copysign", torch.copysign)])
    return f"{name} with its flip along {d}", lambda t: op(t, t.flip(d))


SMALL_INTS = (torch.uint8, torch.int8, torch.int16)
INT_UNARY: list[tuple[str, Op]] = [
    ("neg", torch.neg), ("abs", torch.abs), ("bitwise_not", torch.bitwise_not), ("* 3 - 7", lambda t: t * 3 - 7),
    ("+ 100", lambda t: t + 100), ("clamp(3, 90)", lambda t: t.clamp(3, 90)),
    ("where", lambda t: torch.where(t > 5, t, t * 2)), ("float * 0.7", lambda t: (t.float() * 0.7).to(t.dtype)),
    ("int8 round trip", lambda t: t.to(torch.int8).to(t.dtype)), ("uint8 round trip", lambda t: t.to(torch.uint8).to(t.dtype)),
    ("// 3", lambda t: t // 3), ("% 7", lambda t: t % 7), ("<< 3", lambda t: t << 3), (">> 2", lambda t: t >> 2),
]


def draw_int(rng: random.Random, dim: int) -> tuple[str, Op]:
    """One op of the integer vocabulary (--ops int: uint8/int8/int16 chains, whose arithmetic
    wraps at every op): unary and binary arithmetic, division by a literal, bitwise ops and shifts,
    clamps and maxima, casts between the small dtypes, reductions and scans in the dtype;
    views, placing ops and index_select as draw's."""
    d = rng.randrange(dim)
    kind = rng.choice(["unary", "unary", "binary", "binary", "view", "reduce", "scan", "place", "index"])
    if kind in ("view", "place", "index"):
        return draw(rng, dim, kind)
    if kind == "binary":
        summed = rng.random() < 0.5
        op = rng.choice([torch.add, torch.mul, torch.sub, torch.maximum, torch.minimum, torch.bitwise_xor, torch.bitwise_and,
                         torch.bitwise_left_shift, torch.bitwise_right_shift])  # shifts by any amount, negative and past the bits too
        name = f"{op.__name__} with its {'sum' if summed else 'flip'} along {d}"
        return name, lambda t: op(t, t.sum(d, keepdim=True, dtype=t.dtype) if summed else t.flip(d))
    if kind == "reduce" and dim >= 2:
        name = rng.choice(["amax", "sum", "argmax", "prod", "min"])
        reductions: dict[str, Op] = {
            "amax": lambda t: t.amax(d), "sum": lambda t: t.sum(d, dtype=t.dtype), "argmax": lambda t: t.argmax(d).to(t.dtype),
            "prod": lambda t: t.prod(d, dtype=t.dtype), "min": lambda t: t.min(d)[0],
        }
        return f"{name} along {d}", reductions[name]
    if kind == "scan":
        name = rng.choice(["cumsum", "cummax", "cumprod"])
        scans: dict[str, Op] = {
            "cumsum": lambda t: t.cumsum(d, dtype=t.dtype), "cummax": lambda t: t.cummax(d)[0],
            "cumprod": lambda t: t.cumprod(d, dtype=t.dtype),
        }
        return f"{name} along {d}", scans[name]
    return rng.choice(INT_UNARY)


def _input(size: tuple[int, ...], dtype: torch.dtype, seed: int) -> torch.Tensor:
    """The chain's input: normal values, or the whole range of an integer dtype."""
    generator = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(size, generator=generator).to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max + 1, size, generator=generator, dtype=dtype)


def chain(seed: int, length: int, ops_from: str = "basic",
          regions: bool = False) -> tuple[Callable[[torch.Tensor], torch.Tensor], list[str]]:
    """The program of `seed`: ops drawn against a sample of the first size, so each fits the
    dims it gets; it stops early at a 0-dim, empty or large (> 4096 elements) tensor. With
    `ops_from` "wide", 2 ops in 5 come from draw_wide (basic: the seeds' programs stay as
    they were); "int", all from draw_int. With `regions`, the second op, the fourth, ... run
    in a compile region (named in brackets)."""
    rng = random.Random(seed)
    sample = _input(SIZES[0], torch.int16, seed) if ops_from == "int" else torch.randn(SIZES[0])
    ops: list[Op] = []
    names: list[str] = []
    for _ in range(length):
        if sample.dim() == 0 or sample.numel() == 0 or sample.numel() > 4096:
            break
        if ops_from == "int":
            name, op = draw_int(rng, sample.dim())
        else:
            name, op = draw_wide(rng, sample.dim()) if ops_from == "wide" and rng.random() < 0.4 else draw(rng, sample.dim())
        try:
            sample = op(sample)
        except RuntimeError:  # it does not fit this sample (unfold of a dim shorter than 2): another draw
            continue
        ops.append(op)
        names.append(name)

    region = contextlib.nullcontext
    if regions:
        from xpu_lite import compile_region as region

        names = [f"[{name}]" if i % 2 else name for i, name in enumerate(names)]

    def program(x: torch.Tensor, jitter: torch.Generator | None = None) -> torch.Tensor:
        for i, op in enumerate(ops):
            with region() if i % 2 else contextlib.nullcontext():
                x = op(x)
            if jitter is not None and x.is_floating_point():  # see rounding_spread
                noise = (torch.rand(x.shape, generator=jitter, dtype=torch.float64) * 2 - 1) * torch.finfo(x.dtype).eps
                x = (x.double() * (1 + noise)).to(x.dtype)
        return x * 1.0 if x.is_floating_point() else x * 1  # never an input or a view of one

    return program, names


def compare(got: torch.Tensor, want: torch.Tensor, reference: torch.Tensor, mode: str) -> str | None:
    """None, or why `got` (compiled) is not acceptable next to `want` (eager), `reference`
    being the float64 run of the same chain."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"shape/dtype {tuple(got.shape)} {got.dtype}, eager's {tuple(want.shape)} {want.dtype}"
    if not want.is_floating_point():
        return None if torch.equal(got, want) else "not eager's (integers: exactly)"
    if mode == "lite":
        return None if torch.equal(got.nan_to_num(), want.nan_to_num()) and torch.equal(got.isnan(), want.isnan()) \
            else "not bitwise eager's"
    if got.numel() == 0:
        return None
    if want.dtype == torch.float32 and torch.allclose(got, want, rtol=2e-4, atol=2e-5, equal_nan=True):
        return None
    return _against_float64(got, want, reference, 2.0, 1e-6)


def _error(exc: Exception) -> str:
    """An exception as one line: its type and its message's first line (for Dynamo's
    BackendCompilerFailed, whose first line names only the backend, its cause's)."""
    exc = _inner(exc)
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:300] if text else ''}"


def _inner(exc: Exception) -> Exception:
    """The backend's own error inside Dynamo's BackendCompilerFailed, else exc."""
    return getattr(exc, "inner_exception", None) or exc if isinstance(exc, torch._dynamo.exc.BackendCompilerFailed) else exc


def _error_vs(actual: torch.Tensor, reference: torch.Tensor) -> float:
    """RMS of actual - reference over the elements finite in both (opinfo_sweep's measure)."""
    a, r = actual.double(), reference.double()
    finite = a.isfinite() & r.isfinite()
    return (a[finite] - r[finite]).square().mean().sqrt().item() if finite.any() else 0.0


def rounding_spread(program: Callable[..., torch.Tensor], x: torch.Tensor, weights: torch.Tensor | None,
                    reference: torch.Tensor, reference_grad: torch.Tensor | None, trials: int = 8) -> tuple[float, float]:
    """How far eager's chain lands from float64 when each op's result moves by up to one
    unit in the last place (random, per element; the backward's gradients move with them,
    and a float16/bfloat16 backward's own ops' results move too, model_check's jitter: the
    two terms of atan2(x, x)'s gradient, rounded apart, no longer cancel exactly):
    the largest (result error, gradient error) over `trials` runs. A compiled chain no
    further from float64 than that differs from eager by rounding the chain amplifies (a
    layer_norm over two near-equal values, a logcumsumexp of float16 values near 50), not
    by a wrong value: a dropped cast or a misplaced element moves it much further."""
    worst = [0.0, 0.0]
    for trial in range(trials):
        leaf = x.clone().requires_grad_(weights is not None)
        out = program(leaf, torch.Generator().manual_seed(trial))
        worst[0] = max(worst[0], _error_vs(out.detach(), reference))
        if weights is not None and reference_grad is not None and out.requires_grad:
            with _Jitter(trial):
                out.backward(weights.to(out.dtype))
            worst[1] = max(worst[1], _error_vs(leaf.grad, reference_grad))
    return worst[0], worst[1]


def _fails_as_in_aot_eager(program: Op, x: torch.Tensor, training: bool, exc: Exception) -> bool:
    """Whether aot_eager fails on `program` at `x` too, with the same kind of error
    (Dynamo's BackendCompilerFailed wraps it: the inner errors are compared), forward and, in
    training, backward: a symbolic `2 / (n - 1)` in var's derivative at n = 1 raises
    ZeroDivisionError while tracing, in every backend."""
    torch._dynamo.reset()
    try:
        leaf = x.clone().requires_grad_(training)
        out = torch.compile(program, backend="aot_eager", dynamic=True)(leaf)
        if training and out.requires_grad:
            out.sum().backward()
    except Exception as other:  # noqa: BLE001  (compared, not raised)
        return type(_inner(other)) is type(_inner(exc))
    finally:
        torch._dynamo.reset()
    return False


def _as_aot_eager(program: Op, x: torch.Tensor, weights: torch.Tensor, grad: torch.Tensor) -> bool:
    """Whether aot_eager's gradient of `program` at `x` is `grad` bit for bit (NaNs equal)."""
    leaf = x.clone().requires_grad_()
    torch.compile(program, backend="aot_eager", dynamic=True)(leaf).backward(weights.to(x.dtype))
    return compare(grad, leaf.grad, leaf.grad.double(), "lite") is None


def check(seed: int, length: int, mode: str, dtype: torch.dtype, training: bool, show: bool = False,
          ops_from: str = "basic") -> tuple[str | None, list[str], str | None]:
    """(None or why the program of `seed` failed, its op names, None or a known difference).
    Lite mode's gradient may differ from eager's where AOTAutograd's trace does: torch's
    derivatives that branch on tensor subclasses, which a trace's fake tensors are (prod's
    and cumprod's zero-safe formulas), and the incoming gradient, which AOTAutograd makes
    strided like the output (a reduction of it then adds in another order). Where
    aot_eager's gradient is ours bit for bit, that difference is upstream's: known."""
    import xpu_lite

    program, names = chain(seed, length, ops_from, regions=mode == "region")
    known = None
    torch._dynamo.reset()
    compiled = torch.compile(program, backend="xpu_lite", dynamic=True, mode=None if mode == "default" else "lite")
    for size in SIZES:
        x = _input(size, dtype, seed)
        ours, eager = (x.clone().requires_grad_(training) for _ in range(2))
        exact = x.double().requires_grad_(training)  # the reference (integer chains: compared exactly, none)
        try:
            if show and size == SIZES[0]:
                got, sources = xpu_lite.run_and_get_code(compiled, ours)
                print("\n\n".join(sources))
            else:
                got = compiled(ours)
        except Exception as exc:  # noqa: BLE001  (reported as the program's verdict)
            if _fails_as_in_aot_eager(program, x, training, exc):
                return None, names, f"size {size}: {_error(exc)}, as aot_eager fails (upstream)"
            return f"size {size}: {_error(exc)}", names, None
        want = program(eager)
        reference = program(exact) if x.is_floating_point() else want
        weights = torch.randn(want.shape, generator=torch.Generator().manual_seed(1))
        spread: dict[int, float] = {}  # rounding_spread of the result (0) and gradient (1), where a check fails

        def amplified(got: torch.Tensor, which: int) -> bool:
            if mode == "lite":
                return False
            if which not in spread:
                gradient = (weights, exact.grad) if which == 1 else (None, None)
                spread.update(enumerate(rounding_spread(program, x, gradient[0], reference.detach(), gradient[1])))
            return _error_vs(got, (reference.detach(), exact.grad)[which]) <= spread[which]

        if problem := compare(got.detach(), want.detach(), reference.detach(), mode):
            if not amplified(got.detach(), 0):
                return f"size {size}: {problem}", names, None
            known = known or f"size {size}: {problem}, within eager's spread under one-ulp jitter"
        if training and want.requires_grad and want.is_floating_point():
            try:
                got.backward(weights.to(got.dtype))
            except Exception as exc:  # noqa: BLE001  (as above: the backward graph runs here)
                return f"size {size}, backward: {_error(exc)}", names, None
            want.backward(weights.to(want.dtype))
            reference.backward(weights.double())
            if problem := compare(ours.grad, eager.grad, exact.grad, mode):
                if mode == "lite" and _as_aot_eager(program, x, weights, ours.grad):
                    known = known or f"size {size}, gradient: {problem}, as aot_eager's (upstream)"
                    continue
                if amplified(ours.grad, 1):
                    known = known or f"size {size}, gradient: {problem}, within eager's spread under one-ulp jitter"
                    continue
                return f"size {size}, gradient: {problem}", names, None
    return None, names, known


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0:50", help="START:COUNT (default 0:50)")
    parser.add_argument("--length", type=int, default=6, help="ops per chain (default 6)")
    parser.add_argument("--mode", choices=["default", "lite", "region"], default="default",
                        help="region: lite mode with every other op in a compile region")
    parser.add_argument("--dtype", choices=["float32", "float16", "bfloat16", "uint8", "int8", "int16"], default="float32",
                        help="uint8/int8/int16 with --ops int")
    parser.add_argument("--training", action="store_true", help="the input's gradient too")
    parser.add_argument("--ops", choices=["basic", "wide", "int"], default="basic",
                        help="wide: also gathers/scatter_adds, masked fills, pools, matmuls, norms, sorts, "
                             "unfold, split, tril, more binary ops and reductions; int: integer ops (draw_int)")
    parser.add_argument("--show", action="store_true", help="print each program's generated sources")
    args = parser.parse_args(argv)
    try:
        start, count = (int(n) for n in args.seeds.split(":"))
    except ValueError:
        parser.error(f"--seeds {args.seeds!r}: START:COUNT, two integers")
    if (args.ops == "int") != (getattr(torch, args.dtype) in SMALL_INTS) or (args.ops == "int" and args.training):
        parser.error("--ops int goes with --dtype uint8, int8 or int16, and they with it (no --training)")
    import xpu_lite  # noqa: F401  (registers the backend)

    warnings.filterwarnings("ignore")
    began, failed, knowns = time.perf_counter(), 0, 0
    print(f"{count} chains of {args.length} {args.ops} ops, {args.mode} mode, {args.dtype}"
          f"{', training' if args.training else ''}",
          flush=True)
    for seed in range(start, start + count):
        problem, names, known = check(seed, args.length, args.mode, getattr(torch, args.dtype), args.training, args.show,
                                      args.ops)
        if problem or known or args.show:
            verdict = f"FAIL {problem}" if problem else f"known: {known}" if known else "ok"
            print(f"seed {seed}: {verdict}\n    {' -> '.join(names)}", flush=True)
        failed += problem is not None
        knowns += known is not None and problem is None
    print(f"{count} chains, {failed} failed, {knowns} known, {time.perf_counter() - began:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
