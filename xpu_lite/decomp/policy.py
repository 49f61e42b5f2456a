"""The decomposition policy as data: which aten ops are decomposed inside compile regions.

Output: DECOMPOSE (op -> decomposition) and KEEP (op -> reason it is never decomposed).
Everything else in the pipeline derives from these two tables.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import torch

from .. import _torch_compat as compat
from . import complex_mul, grid_sample, half_steps, layouts, normalization, scatters, search, upsample

aten = torch.ops.aten

# Ops that are never decomposed, even inside regions, with the reason (a random op's: after
# its kind, FallbackKind.RANDOM_OP). Random ops keep the eager RNG stream only if they run
# as the same aten call eager would make.
_KEEP_EXPLICIT: dict[torch._ops.OpOverload, str] = {
    aten.native_dropout.default: "decomposing it would change the RNG stream",
    aten.bernoulli.p: "decomposing it would change the RNG stream",
    aten.bernoulli.default: "decomposing it would change the RNG stream",
}


# Ops the core ATen table keeps whole (they are core ops) but regions decompose, as
# Inductor does, so that their reductions and pointwise parts fuse into few kernels.
_DECOMPOSE_FOR_FUSION: dict[torch._ops.OpOverload, str] = {
    aten._softmax.default: "softmax: amax, exp, sum and div fuse into one reduction kernel",
    aten._log_softmax.default: "log_softmax: amax, exp, sum and log fuse into one reduction kernel",
    aten.native_layer_norm.default: "layer_norm: var_mean and the affine map fuse into one reduction kernel",
    aten.native_group_norm.default: "group_norm: var_mean over each group and the affine map fuse",
    aten.linalg_vector_norm.default: "vector_norm: abs, pow, sum and the root fuse into one reduction kernel",
    aten._native_batch_norm_legit_no_training.default: "batch_norm (inference): the affine map of running stats fuses with its neighbours",
    aten._native_batch_norm_legit_functional.default: "batch_norm (training): var_mean over all but the channel dim and the affine map fuse",
    aten._native_batch_norm_legit.default: "batch_norm (training, no running stats): var_mean and the affine map fuse",
    aten._native_batch_norm_legit.no_stats: "batch_norm (no running stats): var_mean and the affine map fuse",
    aten.dist.default: "dist: the difference and its vector_norm fuse into one reduction kernel",
    aten.ldexp.Tensor: "ldexp: x * 2 ** e, one pointwise kernel",
    aten.addmv.default: "addmv: mv's multiply-and-sum and the scaled add fuse into one reduction kernel (as Inductor "
                        "decomposes it; mv itself is a core decomposition)",
}


# Core ATen decompositions that regions do not apply (Inductor's decomps_to_exclude): a
# Triton lowering takes the op whole, where its decomposition would leave a fallback.
_LOWERED_WHOLE: dict[torch._ops.OpOverload, str] = {
    aten.select_scatter.default: "lowered whole (lowering/indexing.py); its decomposition reads an arange, a fallback",
    aten.silu.default: "lowered whole as x / (1 + exp(-x)), eager's formula, rounded once; its decomposition "
                       "x * sigmoid(x) rounds twice",
    **dict.fromkeys((aten.lerp.Scalar, aten.lerp.Tensor, aten.addcmul.default, aten.addcdiv.default, aten.tanh_backward.default),
                    "lowered whole with eager's fused multiply-add on each device (lowering/fma.py); its decomposition "
                    "rounds the product and the sum apart"),
    aten.sigmoid_backward.default: "lowered whole in eager's order, grad * (1 - y) * y (lowering/fma.py); its "
                                   "decomposition multiplies y * (1 - y) first",
    aten.detach.default: "a view, as alias is (lowering/views.py); decomposed to alias, the copy that autograd saves "
                         "for a scan's backward (detach, clone) was recomputed from an output, which scan's autograd "
                         "then returned twice and refused ('scan might be aliasing', Inductor too)",
}


def _copy_of_view(view: torch._ops.OpOverload) -> Callable[..., Any]:
    """A view's `_copy` op: the view (index math in a kernel) copied to a new contiguous
    tensor, which is what eager's `_copy` ops return whatever the input's layout."""
    def copy(*args: Any, **kwargs: Any) -> Any:
        result = view(*args, **kwargs)
        if isinstance(result, torch.Tensor):
            return result.clone(memory_format=torch.contiguous_format)
        return [r.clone(memory_format=torch.contiguous_format) for r in result]

    return copy


def _view_copy(x: torch.Tensor, size: Any) -> torch.Tensor:
    """view_copy of a contiguous x: its view, copied (by the kernel that reads it). Else a
    contiguous clone, viewed: eager's reshapes where no view of x's strides has `size`, and
    the row-major values are the same either way."""
    if x.is_contiguous():
        return _copy_of_view(aten.view.default)(x, size)
    return aten._unsafe_view.default(x.clone(memory_format=torch.contiguous_format), size)


# The `_copy` ops of views the core table keeps whole (torch._decomp has no decomposition
# for some, and core-ATen consumers such as ExecuTorch take them whole).
_COPIES_OF_VIEWS = {aten.permute_copy.default: aten.permute.default,
                    aten.slice_copy.Tensor: aten.slice.Tensor, aten.select_copy.int: aten.select.int,
                    aten.narrow_copy.default: aten.narrow.default, aten.as_strided_copy.default: aten.as_strided.default,
                    aten.detach_copy.default: aten.detach.default, aten.unbind_copy.int: aten.unbind.int,
                    aten.split_copy.Tensor: aten.split.Tensor}

_NEAREST = {f"{prefix}{dims}d": exact for prefix, exact in (("upsample_nearest", False), ("_upsample_nearest_exact", True))
            for dims in (1, 2, 3)}

# Decompositions of our own in regions, with the reason: in place of core ATen's, or where
# the core table keeps an op whole (put, masked_scatter, the views' _copy ops; an entry may
# decline a call with NotImplemented, which keeps the op). take's `flattened[index]` makes a
# 0-dim index a Python int (`item()`, data-dependent: no trace, in Inductor too);
# index.Tensor takes it as a tensor, the same call for any other index. max_unpool2d's
# scatters into a contiguous buffer; eager's cpu result is channels-last for a
# channels-last input (cuda's and xpu's are contiguous).
_OWN_DECOMPOSITIONS: dict[torch._ops.OpOverload, tuple[Callable[..., Any], str]] = {
    aten.take.default: (scatters.take, "take as index.Tensor of the flattened input: a 0-dim index stays a tensor"),
    aten.put.default: (scatters.put, "put as index_put of the flattened input: a scatter kernel"),
    aten.select_scatter.default: (scatters.select_scatter, "select_scatter kept whole (lowered), its index checked as "
                                                           "eager checks it"),
    aten.masked_scatter.default: (scatters.masked_scatter,
                                  "masked_scatter as a cumsum of the mask and a lookup of the source"),
    aten.scatter_add.default: (scatters.scatter_add, "scatter_add of float16/bfloat16 on cpu added in float32 and "
                                                     "rounded once, as eager's cpu kernel adds; uint8/int8/int16 in int32, "
                                                     "wrapped once"),
    aten.index_put.default: (scatters.index_put, "index_put that adds uint8/int8/int16 values: int32 atomic adds, "
                                                 "wrapped once (the same sum modulo 2**bits)"),
    aten.index_add.default: (scatters.index_add, "index_add as index_put with accumulate, multiplied by alpha in the "
                                                 "dtype; float16/bfloat16 on cpu without alpha added in float32, as "
                                                 "eager's cpu kernel adds"),
    aten.embedding_dense_backward.default: (scatters.embedding_dense_backward,
                                            "embedding's backward as index_put with accumulate, float16/bfloat16 on "
                                            "cpu added in the dtype, as eager's cpu kernel adds"),
    aten._unsafe_masked_index_put_accumulate.default: (scatters.unsafe_masked_index_put_accumulate,
                                                       "torch._decomp's, guarding on no data-dependent size"),
    aten.scatter_reduce.two: (scatters.scatter_reduce, "scatter_reduce as ATen computes it: sum and mean scatter and "
                                                       "scatter_add kernels, amax and amin atomic maxima and minima "
                                                       "(prod keeps the op)"),
    aten.index_reduce.default: (scatters.index_reduce, "index_reduce: amax and amin as scatter_reduce's atomics, mean "
                                                       "as an index_put that adds in the dtype, as eager's kernels add "
                                                       "(prod keeps the op)"),
    aten.max_unpool2d.default: (scatters.max_unpool2d, "max_unpool2d as torch._decomp's scatter, laid out as eager "
                                                       "lays out its result (on cpu the input's memory format)"),
    **{op: (decomposition, f"{op} as eager's binary search, its steps lookups of the boundaries in one kernel "
                           "(decomp/search.py)")
       for op, decomposition in ((aten.bucketize.Tensor, search.bucketize), (aten.bucketize.Scalar, search.bucketize),
                                 (aten.searchsorted.Tensor, search.searchsorted),
                                 (aten.searchsorted.Scalar, search.searchsorted))},
    aten.grid_sampler_2d.default: (grid_sample.grid_sampler_2d, "grid_sampler_2d as lookups of the input with eager's "
                                                                "float32 arithmetic of sizes (decomp/grid_sample.py)"),
    aten.grid_sampler_3d.default: (grid_sample.grid_sampler_3d, "grid_sampler_3d as lookups of the input with eager's "
                                                                "float32 arithmetic of sizes (decomp/grid_sample.py)"),
    aten.cudnn_grid_sampler.default: (grid_sample.cudnn_grid_sampler, "cuDNN's grid sampler (cuda, align_corners) as "
                                                                      "grid_sampler_2d's lookups: the same graph on every device"),
    **{getattr(aten, name).default: (upsample.nearest_default(exact), f"{name} with eager's float32 scale: no float64 ops")
       for name, exact in _NEAREST.items()},
    **{getattr(aten, name).vec: (upsample.upsample_vec_body(upsample.nearest_default(exact)),
                                 f"{name}.vec with eager's float32 scale: no float64 ops")
       for name, exact in _NEAREST.items()},
    **{op: (upsample.float32_scales(torch_decomposition), f"torch._decomp's {op} with float32 scales: no float64 ops; "
                                                          "a uint8 input keeps the op (eager's fixed point)")
       for op, torch_decomposition in (
           *((op, compat.decomposition_table[op]) for op in (
               aten.upsample_linear1d.default, aten.upsample_bilinear2d.default, aten.upsample_trilinear3d.default,
               aten.upsample_bicubic2d.default, aten.upsample_bilinear2d.vec, aten.upsample_trilinear3d.vec,
               aten.upsample_bicubic2d.vec)),
           # torch._decomp leaves upsample_linear1d.vec to its C++ body
           (aten.upsample_linear1d.vec, upsample.upsample_vec_body(compat.decomposition_table[aten.upsample_linear1d.default])),
       )},
    **{op: (_copy_of_view(view), f"{op} as {view} and a contiguous clone: index math and a copy kernel")
       for op, view in _COPIES_OF_VIEWS.items()},
    aten._log_softmax_backward_data.default: (
        layouts.contiguous(compat.decomposition_table[aten._log_softmax_backward_data.default]),
        "torch._decomp's _log_softmax_backward_data, contiguous as eager's result on every device (its structured "
        "kernel's meta function allocates it so): its grad - exp(output) * sum(grad) would take grad's layout"),
    aten.baddbmm.default: (layouts.contiguous(compat.decomposition_table[aten.baddbmm.default]),
                           "baddbmm's core decomposition, contiguous as eager's result (and its meta's): its "
                           "self + bmm would take self's layout"),
    **{op: (normalization.with_float32_statistics(op),
            f"torch._decomp's {op}, its output in the input's suggested memory format as eager's kernels allocate it; "
            "float32 statistics for a float16/bfloat16 input with float32 parameters, as eager's (decomp/normalization.py)")
       for op in layouts.BATCH_NORMS if op is not aten._native_batch_norm_legit_no_training.default},
    **{op: (normalization.with_float32_statistics(op),
            f"torch._refs' {op}, with float32 statistics for a float16/bfloat16 input with float32 parameters, as "
            "eager's (decomp/normalization.py): rounded to the input's dtype, the backward's x - mean no longer sums to zero")
       for op in (aten.native_layer_norm.default, aten.native_group_norm.default)},
    aten._native_batch_norm_legit_no_training.default: (
        layouts.output_in_suggested_format(normalization.batch_norm_inference),
        "batch_norm's inference on cpu as eager's kernel: a float32 scale and shift per channel, rsqrt(var + eps) * w "
        "and fma(-mean, scale, b), then fma(x, scale, shift) (decomp/normalization.py); torch._decomp's elsewhere, its "
        "output in the input's suggested memory format"),
    **{op: (decomposition, f"{op} of float16/bfloat16 rounding to the dtype each step that eager's implementation "
                           f"rounds, {where} (decomp/half_steps.py); torch._decomp's otherwise")
       for op, decomposition, where in (
           (aten.logsumexp.default, half_steps.logsumexp, "on every device"),
           (aten.binary_cross_entropy_with_logits.default, half_steps.binary_cross_entropy_with_logits, "on every device"),
           (aten.soft_margin_loss.default, half_steps.soft_margin_loss, "on every device"),
           (aten.mse_loss.default, half_steps.mse_loss, "on every device"),
           (aten.binary_cross_entropy.default, half_steps.binary_cross_entropy, "on every device"),
           (aten._log_softmax.default, half_steps.log_softmax, "on cpu over the last dim"),
           (aten.logit.default, half_steps.logit, "on cpu"),
           (aten.smooth_l1_loss.default, half_steps.smooth_l1_loss, "on cpu in float16; its reduction of the "
                                                                     "rounded loss on every device"),
           (aten.huber_loss.default, half_steps.huber_loss, "on cpu in bfloat16; its reduction of the rounded loss "
                                                             "on every device"),
           (aten.softshrink.default, half_steps.softshrink, "on cpu (|x| compared with lambd in float32)"),
           (aten.soft_margin_loss_backward.default, half_steps.soft_margin_loss_backward, "on every device"))},
    # the gradients of losses, laid out as eager allocates them (decomp/layouts.py)
    aten.mse_loss_backward.default: (layouts.contiguous(half_steps.mse_loss_backward),
                                     "mse_loss_backward of float16/bfloat16 with eager's steps rounded to the dtype on "
                                     "every device (decomp/half_steps.py), torch._decomp's otherwise; contiguous, as eager's"),
    aten.huber_loss_backward.default: (layouts.contiguous(half_steps.huber_loss_backward),
                                       "huber_loss_backward of float16/bfloat16 on cpu in the order of eager's vectorized body, "
                                       "each step rounded to the dtype "
                                       "(decomp/half_steps.py), torch._decomp's otherwise; contiguous, as eager's"),
    aten.smooth_l1_loss_backward.default: (layouts.contiguous(compat.decomposition_table[aten.smooth_l1_loss_backward.default]),
                                           "torch._decomp's smooth_l1_loss_backward, contiguous, as eager's"),
    aten.binary_cross_entropy_backward.default: (
        layouts.like_input(half_steps.binary_cross_entropy_backward, 1),
        "binary_cross_entropy_backward of float16/bfloat16 with eager's steps rounded to the dtype on every device "
        "(decomp/half_steps.py), torch._decomp's otherwise; laid out as its input, as eager's"),
    aten.logit_backward.default: (layouts.as_tensor_iterator(half_steps.logit_backward),
                                  "logit_backward of float16/bfloat16 on cpu with eps, 1 - eps and each step in the dtype "
                                  "(decomp/half_steps.py); torch._decomp's otherwise, laid out as eager's elementwise "
                                  "kernel over (grad_output, self)"),
    **{op: (layouts.as_tensor_iterator(compat.decomposition_table[op]),
            f"torch._decomp's {op}, laid out as eager's elementwise kernel over (grad_output, self)")
       for op in layouts.ELEMENTWISE_BACKWARDS if op is not aten.logit_backward.default},
    aten.native_dropout_backward.default: (layouts.native_dropout_backward,
                                           "native_dropout_backward as eager's cpu kernel, grad * mask * scale, laid "
                                           "out as its inputs (torch._decomp's, as eager's cuda kernel, elsewhere)"),
    **{op: (decomposition, f"torch._decomp's {op}, on cpu in the input's suggested memory format, as eager's cpu kernel "
                           "lays it out (decomp/layouts.py)")
       for op, decomposition in ((aten.roll.default, layouts.roll), (aten.channel_shuffle.default, layouts.channel_shuffle))},
    aten.native_group_norm_backward.default: (normalization.native_group_norm_backward,
                                              "group_norm's backward with 1 / (HxW * channels per group) a float32 "
                                              "tensor where sizes are symbolic, as eager's kernels: no float64 host ops"),
    aten.mul.Tensor: (complex_mul.mul, "mul of complex64 tensors as eager's formula on their float32 (real, imaginary) "
                                       "pairs, one kernel with its neighbours (decomp/complex_mul.py); a real product "
                                       "keeps the op"),
    aten.add.Tensor: (complex_mul.add, "add of complex64 tensors as the sum of their float32 pairs (decomp/complex_mul.py); "
                                       "a real sum keeps the op"),
    aten.sub.Tensor: (complex_mul.sub, "sub of complex64 tensors as the difference of their float32 pairs "
                                       "(decomp/complex_mul.py); a real difference keeps the op"),
    aten.view_copy.default: (_view_copy, "view_copy as a contiguous clone, viewed: a copy kernel (eager reshapes where "
                                         "no view addresses the input's strides)"),
}


# Functional by their schema (no alias annotation), but their composite bodies return their
# inputs or views of them (found by running the OpInfo samples through every kept body and
# comparing storages). Kept as one node, functionalization would take the outputs for new
# tensors, and an in-place update of one would not reach the input as it does in eager.
# Lite mode decomposes them, as the dispatcher does; a body found aliasing while tracing is
# decomposed too (the trace is repeated).
ALIASING_CIA: frozenset[torch._ops.OpOverload] = frozenset({
    aten.broadcast_tensors.default,
    aten.meshgrid.default,
    aten.meshgrid.indexing,
    aten.atleast_1d.Sequence,
    aten.atleast_2d.Sequence,
    aten.atleast_3d.Sequence,
    aten.type_as.default,
    aten._reshape_from_tensor.default,
    aten.unflatten_dense_tensors.default,
    aten.histogramdd.default,
    aten.histogramdd.int_bins,
    aten.histogramdd.TensorList_bins,
    # a sparse result holds its indices and values tensors: nn.Embedding(sparse=True)'s
    # gradient (each was found while tracing, one retrace each, until 2026-11-28)
    aten._sparse_coo_tensor_unsafe.default,
    aten.embedding_sparse_backward.default,
    aten.embedding_backward.default,
})


def returns_tensors(op: torch._ops.OpOverload) -> bool:
    """Whether every result of `op` is a tensor (or an optional tensor, or a list of them).

    CompositeImplicitAutograd ops that return a number, bool or size (`item`, `is_nonzero`,
    `result_type`, ...) are not kept as one node: their bodies are what eager runs on every
    device (`item` is `_local_scalar_dense`), and torch's own graph passes look for the
    decomposed node (AOTAutograd's tensorify_python_scalars turns `_local_scalar_dense` of a
    float input into tensor math; a kept `item` made it specialize the float instead, and
    rounded `math.pi` to float32 under dynamic=True)."""
    def is_tensor(t: Any) -> bool:
        if isinstance(t, (torch.ListType, torch.OptionalType)):
            t = t.getElementType()
        return isinstance(t, torch.TensorType)

    returns = op._schema.returns
    return bool(returns) and all(is_tensor(r.type) for r in returns)


# Functional by their schema, but their composite bodies write to some inputs when these
# are given: instance_norm updates running_mean/running_var in place (through an alias),
# also with use_input_stats=False (the mean of the batch's repeated copies). Kept as one
# node, functionalization would not see the write, and a training graph's backward, which
# recomputes the body, would write a second time. Lite mode decomposes such calls, as the
# dispatcher does; calls without those inputs stay one node.
HIDDEN_WRITES: dict[torch._ops.OpOverload, tuple[str, ...]] = {
    aten.instance_norm.default: ("running_mean", "running_var"),
}


def writes_inputs(op: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Does this call of a CompositeImplicitAutograd op write to an input its schema calls read-only?"""
    names = HIDDEN_WRITES.get(op)
    if not names:
        return False
    bound = dict(zip((a.name for a in op._schema.arguments), args), **kwargs)
    return any(bound.get(name) is not None for name in names)


# Composite bodies that compute differently when an input requires grad: eager's
# `_may_require_fw_or_bw_grad` makes eigvalsh/svdvals compute vectors too (other last bits).
# A kept node runs under no_grad in the compiled forward, so in training, when an input
# requires grad, lite mode runs their bodies op by op, exactly as eager autograd does
# (found by running the OpInfo samples through every kept body with and without grad).
# scaled_dot_product_attention picks its kernel by which inputs require grad (on cpu an
# attn_mask that requires grad takes the math path, not flash; on cuda flash and efficient
# attention have grad-only constraints): T5's learned position bias, an intermediate that
# requires grad in eager and not in the compiled forward (found by training T5).
# Any other body is checked per call while tracing (plan._grad_dependent: its steps on fake
# tensors with and without requires_grad); these stay listed because fakes cannot show
# their difference (fake tensors are subclass-like, which `_may_require_fw_or_bw_grad`
# counts as requiring grad) or because a device's kernel choice may not run on fakes.
GRAD_DEPENDENT_CIA: frozenset[torch._ops.OpOverload] = frozenset({
    aten.scaled_dot_product_attention.default,
    aten.linalg_eigvalsh.default,
    aten.linalg_eigvals.default,
    aten.linalg_svdvals.default,
    aten.linalg_cond.default,
    aten.linalg_cond.p_str,
    aten.linalg_matrix_norm.default,
    aten.linalg_matrix_norm.str_ord,
    aten.linalg_norm.default,
    aten.linalg_norm.ord_str,
    aten.nuclear_norm.default,
    aten.nuclear_norm.dim,
})


# Composite bodies that read global state which the compiled function can set for itself:
# Dynamo keeps a `with sdpa_kernel([SDPBackend.MATH])` inside the function as calls that run
# while AOTAutograd traces, and not when the graph runs. Where the trace finds the state
# changed since it began, the body runs op by op, its choice traced as eager makes it under
# that context; else the kept op reads the state when it runs, as eager does (a context
# around the compiled call). Kept, sdpa ran its default choice (flash attention on cpu).
STATE_DEPENDENT_CIA: dict[torch._ops.OpOverload, Callable[[], Any]] = {
    aten.scaled_dot_product_attention.default: compat.sdpa_choice_state,
    aten._scaled_dot_product_attention_math.default: compat.sdpa_choice_state,
}

# Ops not composite in C++ on whose Autograd key torch._decomp puts a decomposition that runs
# only under the python dispatcher (while tracing); outside regions lite mode passes it by,
# so the graph differentiates them by their derivative formulas, as eager does
# (decomp/derivatives.py). Left to torch: native_batch_norm (its schema hides the
# running-stats update, so it must become _native_batch_norm_legit, the same kernel),
# cudnn_batch_norm (decomp/cudnn.py) and miopen_batch_norm (ROCm's, which xpu_lite does not
# target; torch._inductor.decomposition registers it when imported). A test keeps both
# lists complete.
EAGER_AUTOGRAD: frozenset[torch._ops.OpOverload] = frozenset({
    aten.upsample_nearest1d.default,
    aten.upsample_nearest2d.default,
    aten.upsample_nearest3d.default,
    aten._upsample_nearest_exact1d.default,
    aten._upsample_nearest_exact2d.default,
    aten._upsample_nearest_exact3d.default,
    aten.upsample_bilinear2d.default,
    aten.upsample_bicubic2d.default,
    aten.hardshrink.default,
    aten.softshrink.default,
    aten.multi_margin_loss.default,
    aten.multilabel_margin_loss_forward.default,
})
AUTOGRAD_REWRITES_LEFT_TO_TORCH = frozenset({aten.native_batch_norm.default, aten.cudnn_batch_norm.default,
                                             aten.miopen_batch_norm.default})


def is_random(op: Any) -> bool:
    return isinstance(op, torch._ops.OpOverload) and torch.Tag.nondeterministic_seeded in op.tags


def own_decomposition(op: Any) -> Callable[..., Any] | None:
    """Our decomposition of `op` where torch's is replaced (_OWN_DECOMPOSITIONS): also what
    a CompositeImplicitAutograd op (upsample's `.vec`) and an op with a python autograd
    kernel (EAGER_AUTOGRAD) run when they decompose, where torch's kernels would run its own."""
    entry = _OWN_DECOMPOSITIONS.get(op)
    return None if entry is None else entry[0]


def own_decomposition_reason(op: Any) -> str | None:
    """What our decomposition of `op` does (_OWN_DECOMPOSITIONS), which calls it keeps included."""
    entry = _OWN_DECOMPOSITIONS.get(op)
    return None if entry is None else entry[1]


@lru_cache(maxsize=1)
def policy() -> tuple[dict[Any, Callable[..., Any]], dict[Any, str]]:
    """(DECOMPOSE, KEEP): core ATen decompositions plus those for fusion, minus the ops
    lowered whole and the ops kept, with our own where listed, and the kept ops."""
    table = dict(compat.core_aten_decompositions())
    table.update(compat.get_decompositions(list(_DECOMPOSE_FOR_FUSION)))
    table = {op: fn for op, fn in table.items() if op not in _LOWERED_WHOLE}
    table.update({op: fn for op, (fn, _) in _OWN_DECOMPOSITIONS.items()})
    keep = dict(_KEEP_EXPLICIT)
    keep.update({op: "keeps the eager RNG stream" for op in table if is_random(op) and op not in keep})
    decompose = {op: fn for op, fn in table.items() if op not in keep}
    both = set(decompose) & set(keep)
    assert not both, f"xpu_lite policy: ops both decomposed and kept: {sorted(map(str, both))}"
    return decompose, keep
