"""What the whole-model probes share (tools/hf_models.py, tools/vision_models.py): their
common arguments, and `check`, which compiles a copy of a model once with dynamic=True and
compares it with eager at several input sizes.

Lite mode must be bitwise equal to eager (with `compile_ops`, which compiles some ops, it is
compared as the default mode is); the default mode is compared per tensor by the
norm of the difference, at most --rtol times the norm of eager's plus --atol per element
(a gradient 0 in exact math is rounding noise, ~1e-11). With --dtype float16/bfloat16 the
default mode is compared with a float64 copy of the model (the same rounded weights), and
so with --autocast (float32 weights, each run under torch.autocast to that dtype; the
float64 copy runs as it is, autocast converts only float32): per tensor, the norm of our
error at most twice eager's plus one unit in the last place of the reference's norm (and
--atol per element); values inside a kernel stay float32, so ours is often the nearer. A
gradient past that but within twice eager's rounding spread (rounding_spread: a ReLU's
mask that rounding flips moves a gradient by whole values) is reported "known", as
tools/op_chains.py does: at that precision eager's own gradient can be as far off, so it
neither passes nor fails. Integer results (batch norm's batch count) must be equal. Each
result is laid out as eager's (its strides), and every mode must compile once for all
sizes (no recompile).
"""
from __future__ import annotations

import argparse
import ast
import collections
import copy
import re
import time
from collections.abc import Callable
from typing import Any

import torch

from xpu_lite._torch_compat import TorchDispatchMode, tree_map

# run(model, size, training) -> [(label, tensor)]: what is compared, eager's and the compiled copy's
Run = Callable[[Any, int, bool], list[tuple[str, torch.Tensor]]]


def parser(description: str, models: dict[str, Any], sizes: str, sizes_default: str) -> argparse.ArgumentParser:
    """The arguments every model probe takes; `sizes` names the one that varies (--lengths)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--mode", choices=["lite", "default"], default="lite")
    p.add_argument("--models", default="", help=f"comma-separated, from: {', '.join(models)} (default all)")
    p.add_argument(f"--{sizes}", default=sizes_default, help=f"{sizes}, one compilation for all")
    phases = p.add_mutually_exclusive_group()
    phases.add_argument("--no-training", action="store_true", help="inference only")
    phases.add_argument("--no-inference", action="store_true", help="training only")
    p.add_argument("--rtol", type=float, default=1e-5, help="default mode (and lite with compile_ops) only: relative error per tensor")
    p.add_argument("--atol", type=float, default=1e-8,
                   help="default mode (and lite with compile_ops) only: per element, added to rtol's bound")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="an xpu_lite option (value a Python literal, else a string), repeatable")
    p.add_argument("--dtype", choices=["float32", "float16", "bfloat16"], default="float32",
                   help="the models' parameters and compute dtype")
    p.add_argument("--device", default=None, help="cpu, cuda or xpu (default: the best available)")
    p.add_argument("--autocast", choices=["float16", "bfloat16"], default=None,
                   help="float32 parameters, each run (eager's, the compiled copy's) under torch.autocast to this dtype")
    p.add_argument("--fallbacks", action="store_true",
                   help="at the end, the eager calls of every compiled graph by op and reason kind, most first")
    return p


def parse(p: argparse.ArgumentParser, argv: list[str] | None, models: dict[str, Any], sizes: str
          ) -> tuple[argparse.Namespace, list[str], list[int], dict[str, Any], torch.device]:
    """(args, model names, sizes, xpu_lite options, device), or a usage error naming what is valid."""
    args = p.parse_args(argv)
    options: dict[str, Any] = {}
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep:
            p.error(f"--option {item!r}: expected KEY=VALUE")
        try:
            options[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            options[key] = value
    names = [n for n in args.models.split(",") if n] or list(models)
    if unknown := [n for n in names if n not in models]:
        p.error(f"--models: unknown {unknown}; valid: {', '.join(models)}")
    try:
        values = [int(n) for n in getattr(args, sizes).split(",")]
    except ValueError:
        p.error(f"--{sizes} {getattr(args, sizes)!r}: comma-separated integers")
    from xpu_lite.config import parse_config
    from xpu_lite.runtime import device_or_usage_error

    device = device_or_usage_error(p, args.device)
    try:
        parse_config(args.mode if args.mode == "lite" else None, options)
    except (TypeError, ValueError) as exc:
        p.error(f"--option: {exc}")
    return args, names, values, options, device


def run_models(args: argparse.Namespace, names: list[str], build: Callable[[str], tuple[Any, Run] | str],
               sizes: list[int], options: dict[str, Any]) -> int:
    """Checks each model built by `build` (or prints why it is skipped), unless --no-inference
    in inference and unless --no-training in training, a line each; then the summary and, with --fallbacks,
    the eager calls by op and reason. The exit status: 1 if any failed."""
    failed = known = 0
    fallbacks: collections.Counter[tuple[str, str]] = collections.Counter()
    start = time.perf_counter()
    for name in names:
        built = build(name)
        if isinstance(built, str):
            print(built)
            continue
        model, run = built
        if args.autocast:
            run = autocast(run, getattr(torch, args.autocast))
        for training in (False,) if args.no_training else (True,) if args.no_inference else (False, True):
            verdict = check(model.train(training), run, sizes, args.mode, training, args.rtol, args.atol, options, fallbacks,
                            getattr(torch, args.autocast) if args.autocast else None)
            failed += verdict.startswith("FAIL")
            known += verdict.startswith("known")
            print(f"{name:9s} {'training ' if training else 'inference'} {verdict}", flush=True)
    print(f"{len(names)} models, {failed} failed, {known} known, {time.perf_counter() - start:.0f} s")
    if args.fallbacks:
        print_fallbacks(fallbacks)
    return 1 if failed else 0


def autocast(run: Run, dtype: torch.dtype) -> Run:
    """`run` under torch.autocast to `dtype` on the model's device. A float64 model (the
    reference) runs as it is: autocast converts only float32 tensors."""
    def under_autocast(model: Any, size: int, training: bool) -> list[tuple[str, torch.Tensor]]:
        with torch.autocast(next(model.parameters()).device.type, dtype):
            return run(model, size, training)

    return under_autocast


def check(model: Any, run: Run, sizes: list[int], mode: str, training: bool, rtol: float, atol: float,
          options: dict[str, Any] | None = None, fallbacks: collections.Counter[tuple[str, str]] | None = None,
          autocast_dtype: torch.dtype | None = None) -> str:
    """'ok ...' or 'FAIL: why', comparing each size's results with eager's; the fallbacks of
    the graphs compiled are counted into `fallbacks` by (op, reason kind). The compiled model
    is a copy, so that state the model updates (batch norm's running statistics) is each's own.
    `autocast_dtype`: `run` runs under autocast (autocast()) and is judged as that dtype is."""
    from xpu_lite.report import capture

    torch._dynamo.reset()
    lite = "lite" if mode == "lite" else None
    bitwise = mode == "lite" and not (options or {}).get("compile_ops")  # compile_ops' kernels: within the bound
    mine = copy.deepcopy(model)
    if options:  # torch.compile refuses mode= with options=: the mode goes inside them
        compiled = torch.compile(mine, backend="xpu_lite", options={"mode": lite, **options}, dynamic=True)
    else:
        compiled = torch.compile(mine, backend="xpu_lite", mode=lite, dynamic=True)
    dtype = autocast_dtype or next(model.parameters()).dtype
    # half precision, default mode: judged against float64 (the same rounded weights)
    reference = copy.deepcopy(model).double() if not bitwise and dtype in (torch.float16, torch.bfloat16) else None
    worst, first, by_spread = 0.0, 0, set()
    began = time.perf_counter()
    with capture() as reports:
        for i, size in enumerate(sizes):
            spread: dict[str, float] = {}
            before = copy.deepcopy(model) if reference is not None else None  # its state before this step
            try:
                want = run(model, size, training)
                got = run(compiled, size, training)
                exact = run(reference, size, training) if reference is not None else None
            except Exception as exc:  # noqa: BLE001  (reported as the model's verdict)
                exc = getattr(exc, "inner_exception", None) or exc  # Dynamo's BackendCompilerFailed: what xpu_lite raised
                return f"FAIL at size {size}: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
            for (label, w), g in zip(want, (t for _, t in got), strict=True):
                if w.numel() > 1 and w.stride() != g.stride():
                    return f"FAIL at size {size}: {label} strides {g.stride()}, eager's {w.stride()}"
                if (bitwise or not w.is_floating_point()) and not torch.equal(w, g):  # integers (a batch count) exact
                    return f"FAIL at size {size}: {label} not bitwise equal (max abs diff {(w - g).abs().max().item():.2e})"
                if bitwise or not w.is_floating_point():
                    continue
                diff, scale = (w.double() - g.double()).norm().item(), w.double().norm().item()
                bound = rtol * scale + atol * w.numel() ** 0.5  # atol: a gradient 0 in exact math is noise
                if exact is not None:  # our error vs float64 at most twice eager's, plus an ulp of the norm
                    r = dict(exact)[label]
                    diff, eager_error = (g.double() - r).norm().item(), (w.double() - r).norm().item()
                    ulp = torch.finfo(dtype).eps * r.norm().item() + atol * w.numel() ** 0.5
                    bound = 2 * eager_error + ulp
                    if not diff <= bound and label.startswith("grad "):  # a ReLU's mask flipped by rounding
                        spread = spread or rounding_spread(before, run, size, training, dict(exact))
                        eager_error = max(eager_error, spread[label])
                        bound = 2 * eager_error + ulp
                        by_spread.add(label)
                worst = max(worst, diff / bound)
                if not diff <= bound:
                    if exact is not None:
                        return (f"FAIL at size {size}: {label} error vs float64 {diff:.3g} > 2 x eager's "
                                f"{eager_error:.3g} + 1 ulp" + (" (its rounding spread)" if label in by_spread else ""))
                    return f"FAIL at size {size}: {label} relative error {diff / max(scale, 1e-300):.2e} > {rtol:.0e}"
            graphs = [r for r in reports if r.kind != "backward"]
            if i == 0:
                first = len(graphs)
            elif len(graphs) != first:
                return f"FAIL at size {size}: recompiled ({len(graphs)} forward graphs, {first} after the first size)"
    if not first:
        return "FAIL: xpu_lite compiled no graph (Dynamo ran the model eagerly)"
    if fallbacks is not None:
        # a detach or a host float cast the wrapper computes without a call (explain's note): "no call"
        fallbacks.update((d.op, "no call" if "no call:" in (d.note or "") else d.reason.kind.value)
                         for r in reports for d in r.fallbacks)
    kernels = sum(len(r.kernels) for r in reports)
    accuracy = "bitwise" if bitwise else f"worst error {worst:.2f}x the bound"
    verdict = f"ok: {accuracy}, {first} graph(s), {kernels} kernel source(s), {time.perf_counter() - began:.1f} s"
    if options and options.get("eager_bindings"):
        verdict += f"; {_boxed_calls(reports)}"
    if by_spread:  # not failed, not passed: at this precision eager's gradient is as far off (op_chains' "known")
        verdict = (f"known: {len(by_spread)} gradient(s) past twice eager's error vs float64 but within its rounding "
                   f"spread ({', '.join(sorted(by_spread)[:3])}{', ...' if len(by_spread) > 3 else ''}); {verdict}")
    return verdict


def rounding_spread(model: Any, run: Run, size: int, training: bool, exact: dict[str, torch.Tensor],
                    trials: int = 4) -> dict[str, float]:
    """How far eager lands from float64, per result, when every float16/bfloat16 result of
    every op moves by up to one unit in the last place (random, per element), forward and
    backward: the largest error over `trials` runs of copies of `model` (its state before
    the step). Through a ReLU (or hardswish's kinks) a value rounded to the other side of 0
    flips the mask: the gradient then moves by whole values, in eager as much as in a
    kernel that rounds elsewhere, which is not a wrong value (tools/op_chains.py's rule)."""
    worst: dict[str, float] = {}
    for trial in range(trials):
        with _Jitter(trial):
            results = run(copy.deepcopy(model), size, training)
        for label, t in results:
            if t.is_floating_point():
                worst[label] = max(worst.get(label, 0.0), (t.double() - exact[label]).norm().item())
    return worst


class _Jitter(TorchDispatchMode):
    """Moves each float16/bfloat16 result of a functional op (not a view, not in place) by one
    unit in the last place up or down, or not at all, at random per element; zeros stay."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.generator = torch.Generator().manual_seed(seed)

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        schema = func._schema
        if schema.is_mutable or any(r.alias_info is not None for r in schema.returns):
            return out
        return tree_map(self._move, out)

    def _move(self, t: Any) -> Any:
        if not isinstance(t, torch.Tensor) or t.dtype not in (torch.float16, torch.bfloat16) or not t.numel():
            return t
        step = torch.randint(-1, 2, t.shape, generator=self.generator).to(t.device)
        step = torch.where(t == 0, 0, step)  # a zero (a ReLU's) is exact: rounding never moves it
        target = torch.where(step > 0, torch.inf, torch.where(step < 0, -torch.inf, t.float())).to(t.dtype)
        return torch.nextafter(t, target)


def print_fallbacks(fallbacks: collections.Counter[tuple[str, str]]) -> None:
    print(f"fallbacks in the compiled graphs ({sum(fallbacks.values())}), by op and reason (\"no call\": none made):")
    for (op, kind), n in fallbacks.most_common():
        print(f"{n:6d}  {kind:14s} {op}")


def _boxed_calls(reports: list[Any]) -> str:
    """How many fallbacks still call `torch.ops.aten.X.Y(` (no binding for them), the most common first."""
    boxed = collections.Counter(op for r in reports for op in re.findall(r"torch\.ops\.aten\.(\w+\.\w+)\(", r.source))
    calls = sum(len(r.fallbacks) for r in reports)
    common = ", ".join(f"{op} {n}" for op, n in boxed.most_common(6))
    return f"{sum(boxed.values())} of {calls} fallback calls boxed ({common})"
