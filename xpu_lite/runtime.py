"""Device selection and loading of generated modules.

Kernels (a later stage) run through Triton on xpu/cuda and through the Triton interpreter
on cpu; generated wrapper modules are loaded here, once per source.
"""
from __future__ import annotations

import hashlib
import linecache
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from . import _torch_compat as compat
from .config import requested_device

if TYPE_CHECKING:
    from .codegen import WrapperCode

DEVICE_PREFERENCE = ("xpu", "cuda", "cpu")


def device_available(device_type: str) -> bool:
    if device_type == "cpu":
        return True
    module = getattr(torch, device_type, None)
    return bool(module is not None and module.is_available())


def best_device() -> torch.device:
    """XPU_LITE_DEVICE if set, else the first available of xpu, cuda, cpu."""
    forced = requested_device()
    if forced is not None:
        device = torch.device(forced)
        if not device_available(device.type):
            raise RuntimeError(f"xpu_lite: XPU_LITE_DEVICE={forced!r} but no {device.type} device is available")
        return device
    return torch.device(next(d for d in DEVICE_PREFERENCE if device_available(d)))


def load_wrapper(code: WrapperCode) -> Callable[[list[Any]], Any]:
    """exec the generated module; its source is registered with linecache for tracebacks."""
    digest = hashlib.sha256(code.source.encode()).hexdigest()[:12]
    filename = f"<xpu_lite {code.name} {digest}>"
    linecache.cache[filename] = (len(code.source), None, code.source.splitlines(True), filename)
    namespace: dict[str, Any] = {"__name__": f"xpu_lite_generated_{digest}", **code.constants}
    exec(compile(code.source, filename, "exec"), namespace)
    call = namespace["call"]
    if code.launches_kernels:
        call = compat.dynamo_disable(call)
    call._boxed_call = True  # AOTAutograd passes a list it lets us clear
    return call


# -- Triton kernels -------------------------------------------------------------------
_KERNELS: dict[tuple[str, str], Any] = {}
_CPU_BLOCKS = tuple(1 << k for k in range(4, 17))  # 16 .. 65536: the interpreter costs ~1 ms per program
_GPU_BLOCKS = (128, 256, 512, 1024)


def pick_block(numel: int, device_type: str) -> int:
    """XBLOCK from a small bucketed set, so one kernel source gives few binaries."""
    blocks = _CPU_BLOCKS if device_type == "cpu" else _GPU_BLOCKS
    return next((b for b in blocks if b >= numel), blocks[-1])


# reductions: the whole row in one block up to this many elements, else chunks of it
PERSISTENT_MAX = {"cpu": 1024, "gpu": 1024}
_TILE = {"cpu": 16384, "gpu": 4096}  # XBLOCK * RBLOCK


def pick_reduction(xnumel: int, rnumel: int, device_type: str) -> tuple[int, int, bool]:
    """(XBLOCK, RBLOCK, persistent) for a reduction launch, from the runtime sizes. Powers
    of two, so one source gives few binaries."""
    target = "cpu" if device_type == "cpu" else "gpu"
    persistent = rnumel <= PERSISTENT_MAX[target]
    rblock = max(2, _next_power_of_2(rnumel)) if persistent else PERSISTENT_MAX[target]
    xblock = max(1, min(_TILE[target] // rblock, _next_power_of_2(xnumel), 1024))
    return xblock, rblock, persistent


def reduction_strategy(rnumel: Any, device_type: str) -> str:
    """How the launch picks a strategy, in words (for explain)."""
    limit = PERSISTENT_MAX["cpu" if device_type == "cpu" else "gpu"]
    if getattr(rnumel, "is_number", False):
        kind = "persistent" if int(rnumel) <= limit else f"looped, RBLOCK={limit}"
        return f"reduces {rnumel} per row: {kind}"
    return f"reduces {rnumel} per row: persistent when <= {limit}, else looped"


def _next_power_of_2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


class _QuietInterpreter:
    """The interpreter computes masked-off lanes too (log(0) there is expected, and never
    stored), so numpy's floating-point warnings are silenced around each launch."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        launch = self.kernel[grid]

        def run(*args: Any, **kwargs: Any) -> Any:
            with np.errstate(all="ignore"):
                return launch(*args, **kwargs)

        return run


def load_kernel(name: str, source: str, device_type: str) -> Any:
    """Compile (or fetch) one kernel for a device type: Triton's JIT on xpu/cuda, the Triton
    interpreter on cpu, chosen when the function is wrapped (no process-wide env var)."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    key = (digest, device_type)
    if key in _KERNELS:
        return _KERNELS[key]
    import importlib.util
    from pathlib import Path

    from .config import kernel_cache_dir

    path = Path(kernel_cache_dir()) / f"{name}_{digest}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != source:
        path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"xpu_lite_kernel_{digest}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    fn = getattr(module, name)
    if device_type == "cpu":
        from triton.runtime.interpreter import InterpretedFunction

        kernel = _QuietInterpreter(InterpretedFunction(fn))
    else:
        import triton

        kernel = triton.jit(fn)
    _KERNELS[key] = kernel
    return kernel
