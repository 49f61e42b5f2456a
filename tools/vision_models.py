"""Vision models through xpu_lite: small convolutional and attention networks, against eager.

tools/hf_models.py covers text models; a vision model's graph is made of other ops:
convolutions and their backward, batch norm whose training step updates its running
statistics (buffers the graph writes in place), max and adaptive pools, hardswish and
squeeze-excitation gates, group norm, a layer norm over a permuted NHWC tensor, a
position embedding resized by bicubic interpolation to the image's patch grid, a bilinear
upsample concatenated with a skip connection, a per-pixel cross entropy. Each model is
written here in a few lines (torchvision is not needed), with random seeded weights, and
compared with eager at several image sizes with dynamic=True (one compilation).

    python tools/vision_models.py                           # lite mode, inference and training
    python tools/vision_models.py --mode default            # Triton kernels, at --rtol
    python tools/vision_models.py --channels-last           # images and weights in NHWC
    python tools/vision_models.py --models vit,unet --sizes 16,24 --no-training
    python tools/vision_models.py --dtype bfloat16 --mode default   # against a float64 copy
    python tools/vision_models.py --mode default --fallbacks        # what still runs eagerly, and why

Compared as tools/model_check.py says: lite mode bitwise, the default mode at --rtol (with
--dtype float16/bfloat16 against a float64 copy of the model), eager's strides, one
compilation for all sizes. Inference compares the output; training the loss, every
parameter's gradient and every buffer after the step (batch norm's running mean and
variance, its batch count). Prints a line per model and phase; exits 1 if anything failed.
"""
from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools import model_check  # noqa: E402


class _Basic(nn.Module):
    """ResNet's basic block: two 3x3 convolutions with batch norm, a projected shortcut."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
        self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
        self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)) \
            if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))) + self.down(x))


class ResNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        self.blocks = nn.Sequential(_Basic(8, 8, 1), _Basic(8, 16, 2))
        self.fc = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1), 1))


class _SqueezeExcite(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.reduce, self.expand = nn.Conv2d(c, c // 2, 1), nn.Conv2d(c // 2, c, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * F.hardsigmoid(self.expand(F.relu(self.reduce(F.adaptive_avg_pool2d(x, 1)))))


class MobileNet(nn.Module):
    """MobileNetV3's inverted residual: expand, depthwise 3x3, squeeze-excite, project; hardswish."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.Hardswish())
        self.block = nn.Sequential(
            nn.Conv2d(8, 16, 1, bias=False), nn.BatchNorm2d(16), nn.Hardswish(),
            nn.Conv2d(16, 16, 3, 1, 1, groups=16, bias=False), nn.BatchNorm2d(16), nn.Hardswish(),
            _SqueezeExcite(16), nn.Conv2d(16, 8, 1, bias=False), nn.BatchNorm2d(8))
        self.head = nn.Sequential(nn.Conv2d(8, 32, 1), nn.Hardswish(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        return self.head(x + self.block(x))


class ConvNeXt(nn.Module):
    """ConvNeXt's block: depthwise 7x7, layer norm over channels in NHWC, an MLP, layer scale."""

    def __init__(self) -> None:
        super().__init__()
        self.stem, self.stem_norm = nn.Conv2d(3, 16, 2, 2), nn.LayerNorm(16)
        self.dwconv, self.norm = nn.Conv2d(16, 16, 7, padding=3, groups=16), nn.LayerNorm(16)
        self.pw1, self.pw2 = nn.Linear(16, 64), nn.Linear(64, 16)
        self.gamma = nn.Parameter(torch.full((16,), 0.5))
        self.head_norm, self.head = nn.LayerNorm(16), nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem_norm(self.stem(x).permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        y = self.gamma * self.pw2(F.gelu(self.pw1(self.norm(self.dwconv(x).permute(0, 2, 3, 1)))))
        x = x + y.permute(0, 3, 1, 2)
        return self.head(self.head_norm(x.mean((-2, -1))))


class ViT(nn.Module):
    """A vision transformer block on 4x4 patches; the position embedding (for a 4x4 grid) is
    resized bicubically to the image's grid, as timm's dynamic image size does."""

    def __init__(self, dim: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.patch = nn.Conv2d(3, dim, 4, 4)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, 1 + 16, dim) * 0.02)
        self.norm1, self.qkv, self.proj = nn.LayerNorm(dim), nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.norm2, self.fc1, self.fc2 = nn.LayerNorm(dim), nn.Linear(dim, 2 * dim), nn.Linear(2 * dim, dim)
        self.head = nn.Linear(dim, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch(x)
        n, c, h, w = x.shape
        pos = self.pos[:, 1:].reshape(1, 4, 4, c).permute(0, 3, 1, 2)
        pos = F.interpolate(pos, size=(h, w), mode="bicubic", align_corners=False).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(n, -1, -1) + self.pos[:, :1], x.flatten(2).transpose(1, 2) + pos], 1)
        q, k, v = self.qkv(self.norm1(x)).reshape(n, -1, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        x = x + self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(n, -1, c))
        x = x + self.fc2(F.gelu(self.fc1(self.norm2(x)), approximate="tanh"))
        return self.head(x[:, 0])


class UNet(nn.Module):
    """One down and one up level: group norm and SiLU, max pool, bilinear upsample to the skip's
    size, concatenation; two classes per pixel."""

    def __init__(self) -> None:
        super().__init__()
        self.enc1 = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.GroupNorm(2, 8), nn.SiLU())
        self.enc2 = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.GroupNorm(4, 16), nn.SiLU())
        self.dec = nn.Sequential(nn.Conv2d(24, 8, 3, padding=1), nn.GroupNorm(2, 8), nn.SiLU())
        self.out = nn.Conv2d(8, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = self.enc1(x)
        deep = self.enc2(F.max_pool2d(skip, 2))
        up = F.interpolate(deep, size=skip.shape[-2:], mode="bilinear", align_corners=False)
        return self.out(self.dec(torch.cat([skip, up], 1)))


MODELS: dict[str, type[nn.Module]] = {"resnet": ResNet, "mobilenet": MobileNet, "convnext": ConvNeXt, "vit": ViT, "unet": UNet}


def main(argv: list[str] | None = None) -> int:
    p = model_check.parser(__doc__.splitlines()[0], MODELS, "sizes", "16,20,24")
    p.add_argument("--channels-last", action="store_true", help="weights and images in torch.channels_last")
    args, names, sizes, options, device = model_check.parse(p, argv, MODELS, "sizes")
    if bad := [s for s in sizes if s < 8 or s % 4]:
        p.error(f"--sizes {bad}: each a multiple of 4, at least 8 (ViT's patches, a pool after a stride)")

    import xpu_lite  # noqa: F401  (registers the backend)

    warnings.filterwarnings("ignore")
    dtype = getattr(torch, args.dtype)
    layout = torch.channels_last if args.channels_last else torch.contiguous_format
    print(f"torch {torch.__version__}, {device}, mode {args.mode}, {args.dtype}"
          + (f" under autocast to {args.autocast}" if args.autocast else "") + f", sizes {sizes}, {layout}"
          + (f", options {options}" if options else ""), flush=True)

    def build(name: str) -> tuple[nn.Module, model_check.Run]:
        torch.manual_seed(0)
        return MODELS[name]().to(device, dtype, memory_format=layout), run

    def run(model: Any, size: int, training: bool) -> list[tuple[str, torch.Tensor]]:
        x = torch.randn(2, 3, size, size, generator=torch.Generator().manual_seed(size))  # float64 for the reference
        return _run(model, x.to(device, next(model.parameters()).dtype, memory_format=layout), training)

    return model_check.run_models(args, names, build, sizes, options)


def _run(model: Any, x: torch.Tensor, training: bool) -> list[tuple[str, torch.Tensor]]:
    """Inference: the output. Training: the loss (cross entropy, per pixel for a segmentation),
    every parameter's gradient, and every buffer after the step."""
    if not training:
        with torch.no_grad():
            return [("output", model(x))]
    for p in model.parameters():
        p.grad = None
    out = model(x)
    labels = torch.arange(out.numel() // out.shape[1], device=out.device).reshape(out[:, 0].shape) % out.shape[1]
    loss = F.cross_entropy(out, labels)
    loss.backward()
    return ([("loss", loss.detach())] + [(f"grad {n}", p.grad.clone()) for n, p in model.named_parameters()]
            + [(f"buffer {n}", b.clone()) for n, b in model.named_buffers()])


if __name__ == "__main__":
    sys.exit(main())
