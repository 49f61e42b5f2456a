"""Per-call time of whole models in inference (or, with --training, a training step):
xpu_lite's lite mode (default options and eager_bindings=True) against eager, aot_eager and
Dynamo's own `eager` backend, side by side in one process, dynamic=True. On a GPU also
xpu_lite's default mode (Triton kernels) and Inductor, each call synchronized.

The 12 tiny transformers models of tools/hf_models.py (random weights, nothing downloaded),
run at three sequence lengths with one compilation. Lite mode with no regions is all eager
fallbacks, so this is the wrapper's cost on real graphs (attention masks, rotary embeddings,
embeddings, caches of constants), where bench_lite.py has a synthetic block.

    python benchmarks/bench_models.py [--models llama,gpt2] [--repeat 40] [--training] [--device cuda] [--write docs/benchmarks.md]

A training step is what tools/hf_models.py checks: gradients cleared, forward with
labels=ids, the loss's backward.

Needs `transformers` (scripts/bootstrap.sh installs it).
"""
from __future__ import annotations

import argparse
import datetime
import platform
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import xpu_lite  # noqa: E402,F401  (registers the backend)
from tools.hf_models import MODELS, import_transformers  # noqa: E402
from xpu_lite.demo import side_by_side_seconds  # noqa: E402
from xpu_lite.report import append_section, format_table, markdown_table  # noqa: E402
from xpu_lite.runtime import device_or_usage_error  # noqa: E402

BACKENDS: list[tuple[str, dict[str, Any]]] = [
    ("Dynamo floor (eager backend)", {"backend": "eager"}),
    ("aot_eager", {"backend": "aot_eager"}),
    ("xpu_lite (lite)", {"backend": "xpu_lite", "mode": "lite"}),
    ("xpu_lite (lite, eager_bindings=True)", {"backend": "xpu_lite", "options": {"mode": "lite", "eager_bindings": True}}),
]
# on a GPU only: under the interpreter the kernels' cost is the interpreter's, and Inductor needs a C++ compiler
GPU_BACKENDS: list[tuple[str, dict[str, Any]]] = [
    ("xpu_lite (default)", {"backend": "xpu_lite"}),
    ("inductor", {"backend": "inductor"}),
]


def backends(device: torch.device) -> list[tuple[str, dict[str, Any]]]:
    return BACKENDS + GPU_BACKENDS if device.type in ("cuda", "xpu") else BACKENDS


def measure(name: str, lengths: list[int], repeat: int, transformers: Any, training: bool = False,
            device: torch.device = torch.device("cpu")) -> tuple[str, ...]:
    """(model, per-call / eager of each backend), each call next to a call of eager."""
    config_cls, model_cls, config_args, extra = MODELS[name]
    torch.manual_seed(0)
    model = getattr(transformers, model_cls)(getattr(transformers, config_cls)(**config_args)).eval().to(device)
    inputs = []
    for length in lengths:
        ids = torch.randint(1, 100, (2, length), generator=torch.Generator().manual_seed(length)).to(device)
        inputs.append((ids, {"labels": ids} if training else extra(ids)))
    step = _training_step if training else _inference
    synchronize = getattr(torch, device.type).synchronize if device.type in ("cuda", "xpu") else (lambda: None)

    def call(*args: Any) -> None:
        step(*args)
        synchronize()

    ratios = []
    for label, kwargs in backends(device):
        torch._dynamo.reset()
        compiled = torch.compile(model, dynamic=True, **kwargs)
        start = time.perf_counter()
        for ids, more in inputs:
            call(model, compiled, ids, more)
        compile_s = time.perf_counter() - start
        pairs = [side_by_side_seconds([lambda: call(model, model, ids, more), lambda: call(model, compiled, ids, more)], repeat)
                 for ids, more in inputs]
        eager, per_call = (sum(column) for column in zip(*pairs))
        ratios.append(per_call / eager)
        print(f"  {name:9s} {label:36s} per-call {per_call / eager:.2f}x eager ({eager * 1e3:.2f} ms), "
              f"first calls {compile_s:.1f} s", flush=True)
    return (name, *(f"{r:.2f}" for r in ratios))


def _inference(model: Any, forward: Any, ids: torch.Tensor, more: dict[str, Any]) -> None:
    with torch.no_grad():
        forward(ids, **more)


def _training_step(model: Any, forward: Any, ids: torch.Tensor, more: dict[str, Any]) -> None:
    for p in model.parameters():
        p.grad = None
    forward(ids, **more).loss.backward()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="", help=f"comma-separated, from: {', '.join(MODELS)} (default all)")
    parser.add_argument("--lengths", default="8,12,17", help="sequence lengths, one compilation for all")
    parser.add_argument("--repeat", type=int, default=40, help="interleaved calls per length")
    parser.add_argument("--training", action="store_true", help="time a training step (forward with labels, backward)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or xpu (default cpu)")
    parser.add_argument("--write", default=None, help="append the table to this markdown file")
    args = parser.parse_args(argv)
    device = device_or_usage_error(parser, args.device)
    names = [n for n in args.models.split(",") if n] or list(MODELS)
    if unknown := [n for n in names if n not in MODELS]:
        parser.error(f"--models: unknown {unknown}; valid: {', '.join(MODELS)}")
    transformers = import_transformers("benchmarks/bench_models.py")
    if transformers is None:
        return 2
    lengths = [int(n) for n in args.lengths.split(",")]
    rows = [measure(name, lengths, args.repeat, transformers, args.training, device) for name in names]
    header = ("model", *(f"{label} / eager" for label, _ in backends(device)))
    table = format_table(header, rows)
    print("\n" + table)
    if args.write:
        stamp = (f"{datetime.date.today().isoformat()}, device {device.type}, torch {torch.__version__}, transformers "
                 f"{transformers.__version__}, {platform.machine()} {torch.get_num_threads()} threads, lengths {lengths}"
                 f"{', training step' if args.training else ''}")
        append_section(args.write, f"bench_models.py — {stamp}", markdown_table(header, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
