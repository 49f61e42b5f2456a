"""User-facing settings: `mode` and `options` of torch.compile -> one typed, frozen LiteConfig.

Input: the `mode` string and `options` dict that torch.compile hands to the backend.
Output: a validated LiteConfig. This is the only module that reads the environment.
"""
from __future__ import annotations

import dataclasses
import difflib
import os
from typing import Any

import torch

from . import _torch_compat as compat

MODES: tuple[str, ...] = ("default", "lite")
# "mode" is an option too: torch.compile refuses mode= and options= together, so lite mode
# with options is spelled options={"mode": "lite", ...}.
OPTIONS: tuple[str, ...] = ("mode", "compile_ops", "keep_ops", "debug_dir", "strict", "reuse_buffers", "eager_bindings")

# Environment settings (read here and nowhere else).
ENV_DEBUG_DIR = "XPU_LITE_DEBUG_DIR"
ENV_DEVICE = "XPU_LITE_DEVICE"
ENV_CACHE_DIR = "XPU_LITE_CACHE_DIR"

# the higher-order operators compile_ops and keep_ops take: flex attention, a kernel of its
# own (codegen/flex_attention.py). Other higher-order ops (cond, scan, ...) are not compiled
# as one: the ops of their subgraphs are selected as any others.
SELECTABLE_HIGHER_ORDER: tuple[str, ...] = ("flex_attention",)
Op = torch._ops.OpOverload | torch._ops.HigherOrderOperator


def op_name(op: Any) -> str:
    """How an op of the lists prints: `aten.gelu.default`, `higher_order.flex_attention`."""
    return f"higher_order.{op.name()}" if isinstance(op, torch._ops.HigherOrderOperator) else str(op)


@dataclasses.dataclass(frozen=True)
class LiteConfig:
    """Everything the pipeline needs to know about what the user asked for."""

    lite: bool = False
    compile_ops: frozenset[Op] = frozenset()
    keep_ops: frozenset[Op] = frozenset()
    debug_dir: str | None = None
    strict: bool = False
    # eager fallbacks write into a dead input where the in-place variant is the same kernel
    # (codegen/inplace.py); False: every fallback is the call eager's trace made
    reuse_buffers: bool = True
    # fallbacks call eager's Python binding (`torch.matmul(...)`) where codegen/bindings.py has
    # one that dispatches the same; False: every fallback is a `torch.ops.aten.X.Y(...)` call
    eager_bindings: bool = False

    @property
    def mode(self) -> str:
        return "lite" if self.lite else "default"


def parse_config(mode: str | None = None, options: dict[str, Any] | None = None) -> LiteConfig:
    """Validate torch.compile's `mode`/`options` for backend="xpu_lite"."""
    if options is not None and isinstance(options, dict) and "mode" in options:
        if mode is not None and mode != options["mode"]:
            raise ValueError(f"xpu_lite: mode={mode!r} and options['mode']={options['mode']!r} disagree")
        mode = options["mode"]
    if mode is not None and not isinstance(mode, str):
        raise TypeError(f"xpu_lite: mode must be a str or None, got {type(mode).__name__}")
    if mode not in (None, *MODES):
        raise ValueError(f"xpu_lite: unknown mode {mode!r}; valid modes: {', '.join(MODES)} (or no mode)")
    options = {} if options is None else options
    if not isinstance(options, dict):
        raise TypeError(f"xpu_lite: options must be a dict, got {type(options).__name__}")
    unknown = sorted(set(options) - set(OPTIONS), key=str)
    if unknown:
        raise ValueError(f"xpu_lite: unknown option(s) {', '.join(map(repr, unknown))}; valid options: {', '.join(OPTIONS)}")

    debug_dir = options.get("debug_dir", os.environ.get(ENV_DEBUG_DIR) or None)
    if debug_dir is not None and not isinstance(debug_dir, (str, os.PathLike)):
        raise TypeError(f"xpu_lite: option 'debug_dir' must be a path, got {type(debug_dir).__name__}")
    strict, reuse_buffers = options.get("strict", False), options.get("reuse_buffers", True)
    eager_bindings = options.get("eager_bindings", False)
    for option, value in (("strict", strict), ("reuse_buffers", reuse_buffers), ("eager_bindings", eager_bindings)):
        if not isinstance(value, bool):
            raise TypeError(f"xpu_lite: option {option!r} must be a bool, got {type(value).__name__}")
    compile_ops = resolve_ops(options.get("compile_ops", ()), "compile_ops")
    keep_ops = resolve_ops(options.get("keep_ops", ()), "keep_ops")
    both = compile_ops & keep_ops
    if both:
        names = ", ".join(sorted(op_name(op) for op in both))
        raise ValueError(f"xpu_lite: {names} is in both 'compile_ops' and 'keep_ops'; an op is either compiled or kept, not both")
    return LiteConfig(
        lite=mode == "lite",
        compile_ops=compile_ops,
        keep_ops=keep_ops,
        debug_dir=None if debug_dir is None else os.fspath(debug_dir),
        strict=strict,
        reuse_buffers=reuse_buffers,
        eager_bindings=eager_bindings,
    )


def requested_device() -> str | None:
    """The device the user forces through the environment, if any (for the demo and benchmarks)."""
    return os.environ.get(ENV_DEVICE) or None


def kernel_cache_dir() -> str:
    """Where generated kernel sources are written (Triton reads a kernel's source from its file)."""
    import tempfile

    return os.environ.get(ENV_CACHE_DIR) or os.path.join(tempfile.gettempdir(), f"xpu_lite_kernels_{os.getuid()}")


def resolve_ops(spec: Any, option: str) -> frozenset[Op]:
    """OpOverload / OpOverloadPacket / "aten.x" / "aten.x.overload" (or a list of them) -> overloads;
    a higher-order operator of SELECTABLE_HIGHER_ORDER ("higher_order.flex_attention") -> itself."""
    if isinstance(spec, (str, torch._ops.OpOverload, torch._ops.OpOverloadPacket, torch._ops.HigherOrderOperator)):
        spec = [spec]
    if not isinstance(spec, (list, tuple, set, frozenset)):
        raise TypeError(f"xpu_lite: option {option!r} must be a list of ops, got {type(spec).__name__}")
    ops: set[Op] = set()
    for item in spec:
        if isinstance(item, torch._ops.OpOverload):
            if not compat.in_dispatcher(item):
                raise ValueError(f"xpu_lite: option {option!r}: {item} is TorchScript's, not an aten operator of the "
                                 f"dispatcher (no graph holds it); its packet's are: {_overload_names(item.overloadpacket)}")
            ops.add(item)
        elif isinstance(item, torch._ops.OpOverloadPacket):
            ops.update(_dispatcher_overloads(item))
        elif isinstance(item, torch._ops.HigherOrderOperator):
            ops.add(_higher_order(item.name(), option))
        elif isinstance(item, str):
            ops.update(_ops_from_name(item, option))
        else:
            raise TypeError(
                f"xpu_lite: option {option!r} takes OpOverload, OpOverloadPacket, a higher-order operator or str "
                f"such as 'aten.add.Tensor'; got {type(item).__name__} {item!r}"
            )
    return frozenset(ops)


def _higher_order(name: str, option: str) -> torch._ops.HigherOrderOperator:
    if name not in SELECTABLE_HIGHER_ORDER:
        raise ValueError(f"xpu_lite: option {option!r}: higher_order.{name} is not compiled as one op: the ops of its "
                         f"subgraphs are selected as any others (name them); the higher-order operators it takes: "
                         f"{', '.join(f'higher_order.{n}' for n in SELECTABLE_HIGHER_ORDER)}")
    return getattr(torch.ops.higher_order, name)


def _dispatcher_overloads(packet: torch._ops.OpOverloadPacket) -> list[torch._ops.OpOverload]:
    """A packet's overloads that can be in a graph: not TorchScript's own (aten.add.t)."""
    return [op for op in (getattr(packet, name) for name in packet.overloads()) if compat.in_dispatcher(op)]


def _overload_names(packet: torch._ops.OpOverloadPacket) -> str:
    return ", ".join(str(op) for op in _dispatcher_overloads(packet))


def _all_op_names() -> tuple[str, ...]:
    """'aten.add.Tensor', 'aten.add' ... for every operator registered now (for suggestions;
    an error's path only, so not cached: a custom op registered since counts)."""
    names: set[str] = set()
    for full in compat.dispatcher_op_names():
        ns, _, rest = full.partition("::")
        base, _, overload = rest.partition(".")
        names.add(f"{ns}.{base}")
        names.add(f"{ns}.{base}.{overload or 'default'}")
    names.update(f"higher_order.{name}" for name in SELECTABLE_HIGHER_ORDER)
    return tuple(sorted(names))


def _ops_from_name(name: str, option: str) -> list[Op]:
    text = name.strip().removeprefix("torch.ops.").replace("::", ".")
    parts = text.split(".")
    packet = None
    if len(parts) in (2, 3):
        try:
            packet = getattr(getattr(torch.ops, parts[0]), parts[1])
        except (AttributeError, RuntimeError):
            packet = None
    if isinstance(packet, torch._ops.HigherOrderOperator) and len(parts) == 2:
        return [_higher_order(parts[1], option)]
    if isinstance(packet, torch._ops.OpOverloadPacket) and len(parts) == 2:
        return _dispatcher_overloads(packet)
    if isinstance(packet, torch._ops.OpOverloadPacket) and parts[2] in {op._overloadname for op in _dispatcher_overloads(packet)}:
        return [getattr(packet, parts[2])]
    if isinstance(packet, torch._ops.OpOverloadPacket):  # the op exists, the overload does not: list the real ones
        raise ValueError(f"xpu_lite: option {option!r}: no operator named {name!r}; "
                         f"{parts[0]}.{parts[1]}'s overloads: {_overload_names(packet)}")
    close = difflib.get_close_matches(text, _all_op_names(), n=5, cutoff=0.6)
    for namespace in ("aten", "higher_order"):  # 'add' for 'aten.add': the namespace left out
        if f"{namespace}.{text}" in _all_op_names():
            close = [f"{namespace}.{text}", *(c for c in close if c != f"{namespace}.{text}")][:5]
    hint = f"; closest matches: {', '.join(close)}" if close else ""
    raise ValueError(f"xpu_lite: option {option!r}: no operator named {name!r}{hint}")
