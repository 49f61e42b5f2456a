"""Device selection and loading of generated modules.

Kernels (a later stage) run through Triton on xpu/cuda and through the Triton interpreter
on cpu; generated wrapper modules are loaded here, once per source.
"""
from __future__ import annotations

import hashlib
import linecache
from collections.abc import Callable
from typing import Any

import torch

from .codegen import WrapperCode
from .config import requested_device

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
    call._boxed_call = True  # AOTAutograd passes a list it lets us clear
    return call
