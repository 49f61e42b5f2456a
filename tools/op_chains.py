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
    python tools/op_chains.py --dtype bfloat16 --training       # against float64
    python tools/op_chains.py --seeds 34:1 --show               # one program: its ops and sources

Lite mode must be bitwise equal (NaNs equal), but for the gradient of a chain with `prod`,
an upstream difference taken as the default mode's. The default mode must be within
rtol = 2e-4, atol = 2e-5 of eager, or else no further from a float64 run of the same chain
than twice eager's error (opinfo_sweep's criterion): an ill-conditioned chain (the argmax of
a layer_norm's row sums, which are rounding noise) differs from eager without being wrong.
float16/bfloat16 results always take the float64 criterion. Prints a line per failure (the
seed reproduces it) and a summary; exits 1 if anything failed.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

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


def draw(rng: random.Random, dim: int) -> tuple[str, Op]:
    """One op for a tensor of `dim` dims: (name, function)."""
    kind = rng.choice(["unary", "unary", "binary", "view", "view", "reduce", "scan", "place", "norm", "index"])
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


def chain(seed: int, length: int) -> tuple[Callable[[torch.Tensor], torch.Tensor], list[str]]:
    """The program of `seed`: ops drawn against a sample of the first size, so each fits the
    dims it gets; it stops early at a 0-dim, empty or large (> 4096 elements) tensor."""
    rng = random.Random(seed)
    sample = torch.randn(SIZES[0])
    ops: list[Op] = []
    names: list[str] = []
    for _ in range(length):
        if sample.dim() == 0 or sample.numel() == 0 or sample.numel() > 4096:
            break
        name, op = draw(rng, sample.dim())
        sample = op(sample)
        ops.append(op)
        names.append(name)

    def program(x: torch.Tensor) -> torch.Tensor:
        for op in ops:
            x = op(x)
        return x * 1.0  # never an input or a view of one

    return program, names


def compare(got: torch.Tensor, want: torch.Tensor, reference: torch.Tensor, mode: str) -> str | None:
    """None, or why `got` (compiled) is not acceptable next to `want` (eager), `reference`
    being the float64 run of the same chain."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"shape/dtype {tuple(got.shape)} {got.dtype}, eager's {tuple(want.shape)} {want.dtype}"
    if mode == "lite":
        return None if torch.equal(got.nan_to_num(), want.nan_to_num()) and torch.equal(got.isnan(), want.isnan()) \
            else "not bitwise eager's"
    if got.numel() == 0:
        return None
    if want.dtype == torch.float32 and torch.allclose(got, want, rtol=2e-4, atol=2e-5, equal_nan=True):
        return None
    return _against_float64(got, want, reference, 2.0, 1e-6)


def _error(exc: Exception) -> str:
    """An exception as one line: its type and its message's first line."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:300] if text else ''}"


def check(seed: int, length: int, mode: str, dtype: torch.dtype, training: bool, show: bool = False) -> tuple[str | None, list[str]]:
    """(None or why the program of `seed` failed, its op names)."""
    import xpu_lite

    program, names = chain(seed, length)
    torch._dynamo.reset()
    compiled = torch.compile(program, backend="xpu_lite", dynamic=True, mode="lite" if mode == "lite" else None)
    for size in SIZES:
        x = torch.randn(size, generator=torch.Generator().manual_seed(seed)).to(dtype)
        ours, eager = (x.clone().requires_grad_(training) for _ in range(2))
        exact = x.double().requires_grad_(training)
        try:
            if show and size == SIZES[0]:
                got, sources = xpu_lite.run_and_get_code(compiled, ours)
                print("\n\n".join(sources))
            else:
                got = compiled(ours)
        except Exception as exc:  # noqa: BLE001  (reported as the program's verdict)
            return f"size {size}: {_error(exc)}", names
        want, reference = program(eager), program(exact)
        if problem := compare(got.detach(), want.detach(), reference.detach(), mode):
            return f"size {size}: {problem}", names
        if training and want.requires_grad and want.is_floating_point():
            weights = torch.randn(want.shape, generator=torch.Generator().manual_seed(1))
            try:
                got.backward(weights.to(got.dtype))
            except Exception as exc:  # noqa: BLE001  (as above: the backward graph runs here)
                return f"size {size}, backward: {_error(exc)}", names
            want.backward(weights.to(want.dtype))
            reference.backward(weights.double())
            # prod's derivative branches on tensor subclasses, which a trace's fake tensors
            # are: its zero-safe cumprod formula while tracing (aot_eager's too), eager's
            # grad * result / input (README, "What lite mode guarantees"): last bits
            known = mode == "lite" and any(name.startswith("prod") for name in names)
            if problem := compare(ours.grad, eager.grad, exact.grad, "default" if known else mode):
                return f"size {size}, gradient: {problem}", names
    return None, names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0:50", help="START:COUNT (default 0:50)")
    parser.add_argument("--length", type=int, default=6, help="ops per chain (default 6)")
    parser.add_argument("--mode", choices=["default", "lite"], default="default")
    parser.add_argument("--dtype", choices=["float32", "float16", "bfloat16"], default="float32")
    parser.add_argument("--training", action="store_true", help="the input's gradient too")
    parser.add_argument("--show", action="store_true", help="print each program's generated sources")
    args = parser.parse_args(argv)
    try:
        start, count = (int(n) for n in args.seeds.split(":"))
    except ValueError:
        parser.error(f"--seeds {args.seeds!r}: START:COUNT, two integers")
    import xpu_lite  # noqa: F401  (registers the backend)

    warnings.filterwarnings("ignore")
    began, failed = time.perf_counter(), 0
    print(f"{count} chains of {args.length} ops, {args.mode} mode, {args.dtype}{', training' if args.training else ''}",
          flush=True)
    for seed in range(start, start + count):
        problem, names = check(seed, args.length, args.mode, getattr(torch, args.dtype), args.training, args.show)
        if problem or args.show:
            print(f"seed {seed}: {'FAIL ' + problem if problem else 'ok'}\n    {' -> '.join(names)}", flush=True)
        failed += problem is not None
    print(f"{count} chains, {failed} failed, {time.perf_counter() - began:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
