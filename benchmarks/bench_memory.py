"""Peak memory of a training step: xpu_lite against eager and aot_eager, model by model.

A compiled training step holds what the forward saves for the backward, and what each
graph's wrapper keeps alive. This script measures the step's peak: the most bytes allocated
at once during one step (gradients cleared, forward with labels=ids, the loss's backward)
above what was allocated before it (the parameters), after two warm-up steps (compiled,
dynamic=True). The models are the tiny transformers models of tools/hf_models.py.

    python benchmarks/bench_memory.py [--models llama,t5] [--length 64] [--batch 4] [--device cuda] [--write docs/benchmarks.md]

On cpu the peak is read from the profiler's allocation events (profile_memory=True: each
allocation and free of the cpu allocator, in order); on cuda and xpu from the allocator's
own peak (max_memory_allocated). Deterministic on cpu: no timing is involved. It also
measures what the forward saves for the backward: the distinct storages autograd's
saved-tensor hooks see, but the parameters (xpu_lite.report.saved_bytes). On a GPU
Inductor is measured too; on cpu xpu_lite's default mode runs its kernels under Triton's
interpreter, whose own arrays are numpy's and not counted (its results are torch's).

Needs `transformers` (scripts/bootstrap.sh installs it).
"""
from __future__ import annotations

import argparse
import datetime
import platform
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import xpu_lite  # noqa: E402,F401  (registers the backend)
from tools.hf_models import MODELS, import_transformers  # noqa: E402
from xpu_lite.report import append_section, format_table, markdown_table, peak_bytes, saved_bytes  # noqa: E402
from xpu_lite.runtime import device_or_usage_error  # noqa: E402

# lite mode compiling the activations and softmax (`compile_ops`): the min cut over them
COMPILE_OPS = ["aten.silu", "aten.gelu", "aten._softmax"]
BACKENDS: list[tuple[str, dict[str, Any] | None]] = [
    ("eager", None),
    ("aot_eager", {"backend": "aot_eager"}),
    ("xpu_lite (lite)", {"backend": "xpu_lite", "mode": "lite"}),
    ("xpu_lite (lite, compile_ops)", {"backend": "xpu_lite", "options": {"mode": "lite", "compile_ops": COMPILE_OPS}}),
    ("xpu_lite (default)", {"backend": "xpu_lite"}),
]
GPU_BACKENDS: list[tuple[str, dict[str, Any] | None]] = [("inductor", {"backend": "inductor"})]
MIB = 2**20


def measure(name: str, length: int, batch: int, transformers: Any, device: torch.device) -> tuple[str, ...]:
    """(model, eager's peak in MiB, each backend's peak / eager's, eager's saved MiB, each
    backend's saved / eager's)."""
    config_cls, model_cls, config_args, _ = MODELS[name]
    torch.manual_seed(0)
    model = getattr(transformers, model_cls)(getattr(transformers, config_cls)(**config_args)).to(device)
    ids = torch.randint(1, 100, (batch, length), generator=torch.Generator().manual_seed(length)).to(device)
    peaks, saved = [], []
    for label, kwargs in BACKENDS + (GPU_BACKENDS if device.type in ("cuda", "xpu") else []):
        torch._dynamo.reset()
        forward = model if kwargs is None else torch.compile(model, dynamic=True, **kwargs)

        def step() -> None:
            for p in model.parameters():
                p.grad = None
            forward(ids, labels=ids).loss.backward()

        step()
        step()
        for p in model.parameters():
            p.grad = None
        peaks.append(peak_bytes(step, device))
        saved.append(saved_bytes(step, held=model.parameters()))
        print(f"  {name:9s} {label:28s} peak {peaks[-1] / MIB:.2f} MiB ({peaks[-1] / peaks[0]:.2f}x eager), "
              f"saved {saved[-1] / MIB:.2f} MiB ({saved[-1] / saved[0]:.2f}x eager)", flush=True)
    return (name, f"{peaks[0] / MIB:.2f}", *(f"{p / peaks[0]:.2f}" for p in peaks[1:]),
            f"{saved[0] / MIB:.2f}", *(f"{v / saved[0]:.2f}" for v in saved[1:]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="llama,gpt2,bert,t5", help=f"comma-separated, from: {', '.join(MODELS)}")
    parser.add_argument("--length", type=int, default=64, help="sequence length")
    parser.add_argument("--batch", type=int, default=4, help="batch size")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or xpu (default cpu)")
    parser.add_argument("--write", default=None, help="append the table to this markdown file")
    args = parser.parse_args(argv)
    device = device_or_usage_error(parser, args.device)
    names = [n for n in args.models.split(",") if n]
    if unknown := [n for n in names if n not in MODELS]:
        parser.error(f"--models: unknown {unknown}; valid: {', '.join(MODELS)}")
    transformers = import_transformers("benchmarks/bench_memory.py")
    if transformers is None:
        return 2
    rows = [measure(name, args.length, args.batch, transformers, device) for name in names]
    labels = [label for label, _ in BACKENDS[1:] + (GPU_BACKENDS if device.type in ("cuda", "xpu") else [])]
    header = ("model", "eager peak (MiB)", *(f"{label} / eager" for label in labels),
              "eager saved (MiB)", *(f"{label} saved / eager" for label in labels))
    table = format_table(header, rows)
    print("\n" + table)
    if args.write:
        stamp = (f"{datetime.date.today().isoformat()}, device {device.type}, torch {torch.__version__}, transformers "
                 f"{transformers.__version__}, {platform.machine()}, batch {args.batch}, length {args.length}, training step")
        append_section(args.write, f"bench_memory.py — {stamp}", markdown_table(header, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
