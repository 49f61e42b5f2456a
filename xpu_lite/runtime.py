"""Device selection and loading of generated modules.

Kernels (a later stage) run through Triton on xpu/cuda and through the Triton interpreter
on cpu; generated wrapper modules are loaded here, once per source.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import hashlib
import linecache
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from . import _torch_compat as compat
from .config import requested_device

if TYPE_CHECKING:
    from pathlib import Path

    from .codegen import WrapperCode

DEVICE_PREFERENCE = ("xpu", "cuda", "cpu")


def device_available(device_type: str) -> bool:
    if device_type == "cpu":
        return True
    is_available = getattr(getattr(torch, device_type, None), "is_available", None)
    return bool(callable(is_available) and is_available())


def best_device() -> torch.device:
    """XPU_LITE_DEVICE if set, else the first available of xpu, cuda, cpu."""
    forced = requested_device()
    if forced is not None:
        return resolve_device(forced, source="XPU_LITE_DEVICE")
    return torch.device(next(d for d in DEVICE_PREFERENCE if device_available(d)))


def resolve_device(name: str | None, source: str = "--device") -> torch.device:
    """A device the user names (None: best_device()), checked: a ValueError naming the
    device types xpu_lite runs on and those this machine has, rather than torch's error."""
    if name is None:
        return best_device()
    available = [d for d in DEVICE_PREFERENCE if device_available(d)]
    try:
        device = torch.device(name)
    except RuntimeError:
        device = None
    if device is None or device.type not in DEVICE_PREFERENCE:
        raise ValueError(f"{source}={name!r}: xpu_lite runs on {', '.join(DEVICE_PREFERENCE)}; this machine has {', '.join(available)}")
    if device.type not in available:
        raise ValueError(f"{source}={name!r}: no {device.type} device on this machine; it has {', '.join(available)}")
    return device


def device_or_usage_error(parser: argparse.ArgumentParser, name: str | None) -> torch.device:
    """resolve_device for a command line: a bad device is the parser's usage error (exit 2)."""
    try:
        return resolve_device(name)
    except ValueError as exc:
        parser.error(str(exc))


def load_wrapper(code: WrapperCode) -> Callable[[list[Any]], Any]:
    """exec the generated module; its source is registered with linecache for tracebacks."""
    digest = hashlib.sha256(code.source.encode()).hexdigest()[:12]
    filename = f"<xpu_lite {code.name} {digest}>"
    linecache.cache[filename] = (len(code.source), None, code.source.splitlines(True), filename)
    namespace: dict[str, Any] = {"__name__": f"xpu_lite_generated_{digest}", **code.constants}
    exec(compile(code.source, filename, "exec"), namespace)
    call = compat.never_traced(namespace["call"])
    call._boxed_call = True  # AOTAutograd passes a list it lets us clear
    return call


class Subgraph:
    """A higher-order op's subgraph (cond's branch, while_loop's condition or body, a nested
    compile region's block, scan's combine_fn, map's body), compiled by xpu_lite: eager's op
    calls it with the operands as arguments, as it called the GraphModule it replaces. Its
    kernels read each operand at the strides it was traced with: an operand traced
    contiguous is made contiguous first (scan and map pass slices they cut, such as rows of
    a zero-stride gradient; a no-op for one already contiguous)."""

    def __init__(self, name: str, call: Callable[[list[Any]], Any], contiguous: tuple[int, ...]) -> None:
        self.name, self._call, self._contiguous = name, call, contiguous  # positions traced contiguous

    def __call__(self, *operands: Any) -> Any:
        args = list(operands)
        for i in self._contiguous:
            args[i] = args[i].contiguous()
        return self._call(args)

    def __repr__(self) -> str:
        return f"<xpu_lite subgraph {self.name}>"


# -- Triton kernels -------------------------------------------------------------------
_KERNELS: dict[tuple[str, str, str], Any] = {}
_CPU_BLOCKS = tuple(1 << k for k in range(4, 17))  # 16 .. 65536: the interpreter costs ~1 ms per program
_GPU_BLOCKS = (128, 256, 512, 1024)


def pick_block(numel: int, device_type: str) -> int:
    """XBLOCK from a small bucketed set, so one kernel source gives few binaries."""
    blocks = _CPU_BLOCKS if device_type == "cpu" else _GPU_BLOCKS
    return next((b for b in blocks if b >= numel), blocks[-1])


# tiled pointwise kernels (transposes): YBLOCK x XBLOCK elements, square up to _TILE_SIDE
_TILE_SIDE = {"cpu": 128, "gpu": 32}


def pick_tile(xnumel: int, ynumel: int, device_type: str) -> tuple[int, int]:
    """(XBLOCK, YBLOCK) for a tiled pointwise launch: powers of two, square (32 x 32 on a
    GPU: one shared-memory transpose per tile) unless one side is short, when the other
    grows to keep the tile's size (a (n, 2) result is 2 x 512 tiles, not 94% masked lanes)."""
    target = "cpu" if device_type == "cpu" else "gpu"
    side = _TILE_SIDE[target]
    xblock, yblock = min(side, _next_power_of_2(xnumel)), min(side, _next_power_of_2(ynumel))
    if xblock < side:
        yblock = min(side * side // xblock, _next_power_of_2(ynumel))
    elif yblock < side:
        xblock = min(side * side // yblock, _next_power_of_2(xnumel))
    return xblock, yblock


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


def reduction_strategy(rnumel: Any, device_type: str, verb: str = "reduces", ordered: bool = False) -> str:
    """How the launch picks a strategy, in words (for explain); `verb` says what the kernel
    does along a row ("scans" for one with only scans)."""
    if ordered:
        return f"{verb} {rnumel} per row: in order, one element at a time (RBLOCK=1), as eager's loop walks it"
    limit = PERSISTENT_MAX["cpu" if device_type == "cpu" else "gpu"]
    if getattr(rnumel, "is_number", False):
        kind = "persistent" if int(rnumel) <= limit else f"looped, RBLOCK={limit}"
        return f"{verb} {rnumel} per row: {kind}"
    return f"{verb} {rnumel} per row: persistent when <= {limit}, else looped"


INT32_SPAN = 2**31  # a launch whose element offsets reach this indexes in int64


def index_type(span: int) -> Any:
    """A launch's INDEX constexpr: tl.int32 when every element offset it computes (below
    `span`, the largest extent of its buffers) fits, else tl.int64 (past 2**31 elements).
    Runs before every launch: the dtypes are looked up once."""
    return _index_dtypes()[span >= INT32_SPAN]


@functools.cache
def _index_dtypes() -> tuple[Any, Any]:
    import triton.language as tl  # lazily: lite mode without kernels never imports triton

    return tl.int32, tl.int64


def _next_power_of_2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


class _QuietInterpreter:
    """The interpreter computes masked-off lanes too (log(0) there is expected, and never
    stored), so numpy's floating-point warnings are silenced around each launch.

    A kernel that checks bounds (an indirect load) runs with the interpreter's debug option
    on, as Triton's JIT compiles it (gpu_launch_options), so its tl.device_assert fires; the
    failed assert is raised as IndexOutOfRange."""

    def __init__(self, kernel: Any, checks_bounds: bool = False) -> None:
        self.kernel = kernel
        self.checks_bounds = checks_bounds

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        launch = self.kernel[grid]

        def run(*args: Any, **kwargs: Any) -> Any:
            with np.errstate(all="ignore"), _interpreter_options(self.checks_bounds):
                try:
                    return launch(*args, **kwargs)
                except Exception as exc:  # the interpreter wraps what the kernel raised
                    if self.checks_bounds and isinstance(exc.__cause__, AssertionError):
                        raise IndexOutOfRange(str(exc.__cause__)) from None
                    raise

        return run


class IndexOutOfRange(IndexError, RuntimeError):
    """A kernel read an index tensor holding a position out of range (on cpu; on a GPU the
    device assert ends the context, as eager's own kernels do). Both an IndexError and a
    RuntimeError: eager raises one or the other, by op, dim and device."""


@contextlib.contextmanager
def _interpreter_options(debug: bool) -> Iterator[None]:
    """Triton's interpreter with device asserts on or off, as a GPU launch compiles them
    (gpu_launch_options), and no integer-overflow sanitizing: with debug off its assert is
    dropped, but the interpreter computes its int64 operation and comparisons all the same,
    about half of a launch's time in index arithmetic. (Its options are one module-level
    object, fixed at import; a launch reads them as it runs.)"""
    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    saved = builder.options
    builder.options = dataclasses.replace(saved, debug=debug, sanitize_overflow=False)
    try:
        yield
    finally:
        builder.options = saved


def load_kernel(name: str, source: str, device_type: str, signature: dict[str, str], checks_bounds: bool = False,
                ordered: bool = False) -> Any:
    """Compile (or fetch) one kernel for a device type: Triton's JIT on xpu/cuda, the Triton
    interpreter on cpu, chosen when the function is wrapped (no process-wide env var).

    On xpu/cuda the source is compiled here, for the current device (compile_ahead), so a
    kernel that does not compile raises now, where the caller can fall back to eager,
    rather than at its first launch inside the generated wrapper. `checks_bounds`: the
    kernel asserts (ir.Kernel.checks_bounds), so it is compiled with Triton's debug on;
    `ordered`: a reduction launched with RBLOCK 1 (ir.Kernel.ordered), compiled so."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    key = (digest, name, device_type)  # a source may hold several kernels (flex attention's and its combine)
    if key in _KERNELS:
        return _KERNELS[key]
    if device_type == "cpu" and _RUNTIME_LOOP.search(source):
        problem = interpreter_loop_problem()
        if problem is not None:
            raise RuntimeError(problem)
    fn = kernel_function(name, source)
    if device_type == "cpu":
        from triton.runtime.interpreter import InterpretedFunction

        kernel = _QuietInterpreter(InterpretedFunction(fn), checks_bounds)
    else:
        import triton

        kernel = triton.jit(fn)
        compile_ahead(kernel, signature, current_target(), checks_bounds=checks_bounds, ordered=ordered)
    _KERNELS[key] = kernel
    return kernel


# a loop over a row whose length is a kernel argument (looped reductions and scans); not
# one over a constexpr count, by convention an upper-case name (codegen/helpers.py's BITS:
# a Python int in the interpreter)
_RUNTIME_LOOP = re.compile(r"^\s*for \w+ in (?:tl\.)?range\((?![A-Z_]+\))", re.MULTILINE)
_LOOP_PROBE = """import triton.language as tl


def xpu_lite_loop_probe(out_ptr, n):
    total = 0
    for i in range(0, n, 1):
        total += 1
    tl.store(out_ptr, total)
"""


@functools.cache
def interpreter_loop_problem() -> str | None:
    """None, or why this Triton interpreter cannot run a loop whose bound is a kernel
    argument. Triton before 3.9 passes an int argument to an interpreted kernel as a
    one-element array and takes `range()`'s bound with int() of it, which numpy 2.4 refuses
    (TypeError: only 0-dimensional arrays can be converted); 3.9 takes the element. Probed
    once, by running such a loop. A kernel with such a loop (a reduction's looped variant,
    an ordered fold) then fails to load and runs eagerly, with this reason, instead of
    raising numpy's error from inside the wrapper at its first long row: on cpu kernels
    are for numerics, and eager's are exact."""
    import triton
    from triton.runtime.interpreter import InterpretedFunction

    with compat.real_tensors():  # called while compiling
        out = torch.zeros(1, dtype=torch.int32)
        try:
            InterpretedFunction(kernel_function("xpu_lite_loop_probe", _LOOP_PROBE))[(1,)](out, 2)
        except Exception as exc:  # noqa: BLE001  (any failure of the probe is the answer)
            cause = exc.__cause__ or exc
            return (f"triton {triton.__version__}'s interpreter cannot run a loop over a row whose length is a "
                    f"kernel argument with numpy {np.__version__} ({type(cause).__name__}: {cause}); on cpu, "
                    f"looped reductions and scans need triton>=3.9 (or numpy<2.4)")
        steps = int(out.item())
    return None if steps == 2 else f"triton {triton.__version__}'s interpreter ran a 2-step loop {steps} time(s)"


def current_target() -> Any:
    """The triton GPUTarget of the current xpu/cuda device."""
    import triton

    return triton.runtime.driver.active.get_current_target()


def kernel_function(name: str, source: str) -> Callable[..., Any]:
    """The plain Python function a kernel source defines. Triton reads a kernel's source
    through inspect, so the module is written to the kernel cache directory first."""
    import importlib.util
    from pathlib import Path

    from .config import kernel_cache_dir

    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    path = Path(kernel_cache_dir()) / f"{name}_{digest}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != source:
        _write_atomically(path, source)
    spec = importlib.util.spec_from_file_location(f"xpu_lite_kernel_{digest}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return getattr(module, name)


def _write_atomically(path: Path, text: str) -> None:
    """Write a file whole or not at all. Processes that compile at once (a node's ranks,
    which share the cache directory) write the same kernel: written in place, one of them
    could import another's half-written file (a module without the kernel)."""
    import os
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


# Launch options passed to every GPU kernel. FMA contraction on, as nvcc compiles eager's
# kernels; explicit, because Triton 3.9 warns when it is left to its default (and 3.10
# changes that default).
GPU_LAUNCH_OPTIONS = {"enable_fp_fusion": True}
# cuda: libdevice keeps subnormals, as eager's nvcc build does. Triton's default makes it
# flush them (nvvm-reflect-ftz): fmod(1e-39, -0.3) was 0 on an H200, so 1e-39 // -0.3 was
# -0.0 where eager's is -1.0. Intel's backend has no such option.
CUDA_LAUNCH_OPTIONS = {"enable_reflect_ftz": False}
# and to a kernel that checks bounds: its tl.device_assert compiled in (Triton drops it
# otherwise), without the integer-overflow asserts debug would add too (as Inductor does)
BOUNDS_CHECK_OPTIONS = {"debug": True, "sanitize_overflow": False}


def gpu_launch_options(checks_bounds: bool, backend: str) -> dict[str, Any]:
    """The options of a launch on `backend` (a device type: "cuda", "xpu")."""
    return {**GPU_LAUNCH_OPTIONS, **(CUDA_LAUNCH_OPTIONS if backend == "cuda" else {}),
            **(BOUNDS_CHECK_OPTIONS if checks_bounds else {})}
# constexprs compile_ahead uses: the largest blocks a launch picks
_AHEAD_BLOCKS = {"XBLOCK": _GPU_BLOCKS[-1], "RBLOCK": PERSISTENT_MAX["gpu"], "YBLOCK": _TILE_SIDE["gpu"]}


def compile_ahead(kernel: Any, signature: dict[str, str], target: Any, index_span: int = 0, aligned: bool = False,
                  checks_bounds: bool = False, ordered: bool = False) -> Any:
    """Compile a triton.jit kernel for `target` (a triton GPUTarget) through every stage
    Triton has for it (for cuda: TTIR, TTGIR, LLVM IR, PTX, cubin), with the largest
    blocks a launch would pick and int32 indexing (int64 when index_span says so: see
    index_type). `aligned`: every pointer and int argument divisible by 16, as Triton's JIT
    specializes a launch on 16-byte aligned tensors and sizes (what vectorizes loads).
    `ordered`: a reduction launched with RBLOCK 1 and a pointwise launch's largest XBLOCK.
    Needs no device: tests compile for cuda on a cpu machine. Raises what Triton raises
    when the source does not compile."""
    import triton
    from triton.compiler import ASTSource

    ahead = {**_AHEAD_BLOCKS, "INDEX": index_type(index_span)}
    constexprs = {name: ahead[name] for name, kind in signature.items() if kind == "constexpr"}
    if "RBLOCK" in constexprs and ordered:  # rows one element at a time, XBLOCK as pick_block picks
        constexprs["RBLOCK"] = 1
    elif "RBLOCK" in constexprs:  # a reduction: XBLOCK rows of RBLOCK, as pick_reduction tiles
        constexprs["XBLOCK"] = max(1, _TILE["gpu"] // constexprs["RBLOCK"])
    if "YBLOCK" in constexprs:  # a tiled pointwise kernel: square tiles, as pick_tile picks
        constexprs["XBLOCK"] = _TILE_SIDE["gpu"]
    attrs = {(i,): [["tt.divisibility", 16]] for i, kind in enumerate(signature.values()) if aligned and kind != "constexpr"}
    return triton.compile(ASTSource(kernel, signature, constexprs, attrs), target=target,
                          options=gpu_launch_options(checks_bounds, target.backend))
