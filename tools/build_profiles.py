#!/usr/bin/env python3
"""Build the bundled per-layer profiles of real networks in ``data/profiles/``.

Self-contained (standard library only): every architecture is written out
layer by layer from its paper and the torchvision / Hugging Face reference
implementation, and each row's parameter count and forward FLOPs per sample
are computed by hand from the layer shapes.  No framework is imported and
nothing is downloaded.

Usage::

    python tools/build_profiles.py              # writes data/profiles/
    python tools/build_profiles.py --out DIR    # writes DIR/<name>.csv, DIR/index.csv

The script prints a Markdown table of computed vs published parameter counts
and forward GFLOPs (pasted into ``data/profiles/README.md``).

Counting conventions (also written into every CSV header):

* A multiply-add is 2 FLOPs.  Conv / linear FLOPs are ``2 * MACs`` plus one
  FLOP per output element for a bias.  Attention rows include the Q/K/V and
  output projections plus the two ``L x L`` score/context matmuls (the full
  square is counted for causal GPT-2, as the reference implementation does).
* Embedding lookups are 0 FLOPs.
* Elementwise costs are small fixed counts per element: BatchNorm/LayerNorm 5
  (statistics, normalise, scale, shift), ReLU/ReLU6 1, tanh/sigmoid 4,
  GELU 8, softmax 5, residual add 1, max/avg pool ``k*k`` per output element.
  Dropout and the loss are not counted.
* CNNs: BatchNorm (its 2*C parameters and FLOPs) and the activation are
  folded into the row of the convolution they belong to (post-activation
  nets: the conv they follow; DenseNet's pre-activation units: the conv they
  precede); the residual add is folded into the block's last conv row.
  Pooling layers are separate zero-parameter ``pool`` rows.
* Transformers: one ``attention`` row per block (all four projections and
  the score/softmax/context computation, residual add folded in), separate
  ``norm`` rows for LayerNorms, one ``fc`` row per FFN matmul (GELU folded
  into the first, residual add into the second).
* LSTM: one ``lstm`` row per layer over the whole sequence (gate matmuls,
  both bias vectors, gate nonlinearities and cell update).
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "data" / "profiles"

# Elementwise FLOPs per element (see module docstring).
NORM_F = 5
RELU_F = 1
TANH_F = 4
SIGMOID_F = 4
GELU_F = 8
SOFTMAX_F = 5
ADD_F = 1

KINDS = ("conv", "fc", "attention", "embedding", "norm", "lstm", "pool", "other")

CONVENTIONS = (
    "multiply-add = 2 FLOPs; bias add 1 FLOP/output; embeddings 0 FLOPs; "
    "norm 5, relu 1, tanh/sigmoid 4, gelu 8, softmax 5, residual add 1 FLOPs/element; "
    "pool k*k FLOPs/output; dropout and loss not counted"
)
CNN_ROWS = (
    "BatchNorm params/FLOPs and activation folded into the conv row they belong to "
    "(residual add into the block's last conv); pools are separate zero-param rows"
)
TRANSFORMER_ROWS = (
    "one attention row per block (Q/K/V/output projections + scores + softmax + context "
    "+ residual add); LayerNorms as norm rows; one fc row per FFN matmul "
    "(activation folded into the first, residual add into the second)"
)


@dataclass(frozen=True)
class Row:
    """One profile row."""

    layer: str
    kind: str
    params: int
    flops: int


@dataclass
class Profile:
    """A network's rows plus its metadata."""

    name: str
    display_name: str
    family: str
    sample_unit: str
    architecture: str
    published_params: int
    published_source: str
    default_global_batch: int
    row_notes: str
    notes: tuple[str, ...] = ()
    rows: list[Row] = field(default_factory=list)

    def add(self, layer: str, kind: str, params: int, flops: int) -> None:
        assert kind in KINDS, kind
        assert params >= 0 and flops >= 0, (layer, params, flops)
        self.rows.append(Row(layer, kind, int(params), int(flops)))

    @property
    def params(self) -> int:
        return sum(r.params for r in self.rows)

    @property
    def flops(self) -> int:
        return sum(r.flops for r in self.rows)


# ---------------------------------------------------------------------------
# CNN building blocks.  A feature-map shape is (C, H, W).
# ---------------------------------------------------------------------------

Shape = tuple[int, int, int]


def _pair(v: int | tuple[int, int]) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else v


def _out_len(n: int, k: int, s: int, p: int, ceil: bool = False) -> int:
    num = n + 2 * p - k
    if ceil:
        out = -(-num // s) + 1
        if (out - 1) * s >= n + p:  # PyTorch: last window must start inside input
            out -= 1
        return out
    return num // s + 1


def conv(
    prof: Profile,
    name: str,
    x: Shape,
    cout: int,
    k: int | tuple[int, int],
    s: int = 1,
    p: int | tuple[int, int] = 0,
    groups: int = 1,
    bias: bool = False,
    bn: str | None = "post",
    act: int = RELU_F,
    residual: bool = False,
) -> Shape:
    """Append a conv row (BN/activation folded in) and return the output shape.

    ``bn``: ``"post"`` BN on the output (then ``act``), ``"pre"`` BN+act on the
    input (DenseNet pre-activation), ``None`` no BN (``act`` on the output).
    ``residual``: add the identity branch before the final activation.
    """
    cin, h, w = x
    kh, kw = _pair(k)
    ph, pw = _pair(p)
    ho, wo = _out_len(h, kh, s, ph), _out_len(w, kw, s, pw)
    out_el = cout * ho * wo
    in_el = cin * h * w
    macs = kh * kw * (cin // groups) * cout * ho * wo
    params = kh * kw * (cin // groups) * cout + (cout if bias else 0)
    flops = 2 * macs + (out_el if bias else 0)
    if bn == "post":
        params += 2 * cout
        flops += NORM_F * out_el + (ADD_F * out_el if residual else 0) + act * out_el
    elif bn == "pre":
        params += 2 * cin
        flops += (NORM_F + act) * in_el
    else:
        flops += (ADD_F * out_el if residual else 0) + act * out_el
    prof.add(name, "conv", params, flops)
    return (cout, ho, wo)


def pool(
    prof: Profile,
    name: str,
    x: Shape,
    k: int,
    s: int,
    p: int = 0,
    ceil: bool = False,
) -> Shape:
    """Append a max/avg pool row (k*k FLOPs per output element)."""
    c, h, w = x
    ho, wo = _out_len(h, k, s, p, ceil), _out_len(w, k, s, p, ceil)
    prof.add(name, "pool", 0, k * k * c * ho * wo)
    return (c, ho, wo)


def global_pool(prof: Profile, name: str, x: Shape) -> Shape:
    """Append an adaptive average pool to 1x1 (one FLOP per input element)."""
    c, h, w = x
    prof.add(name, "pool", 0, c * h * w)
    return (c, 1, 1)


def linear(
    prof: Profile,
    name: str,
    fin: int,
    fout: int,
    tokens: int = 1,
    bias: bool = True,
    act: int = 0,
    residual: bool = False,
    params: int | None = None,
) -> None:
    """Append an fc row applied to ``tokens`` positions (``params`` overrides, e.g. tied)."""
    p = fin * fout + (fout if bias else 0)
    f = tokens * (2 * fin * fout + (fout if bias else 0) + act * fout)
    if residual:
        f += tokens * ADD_F * fout
    prof.add(name, "fc", p if params is None else params, f)


# ---------------------------------------------------------------------------
# Image CNNs (torchvision conventions, ImageNet, 1000 classes).
# ---------------------------------------------------------------------------

IMG224 = (3, 224, 224)
TV = "torchvision.models"


def _cnn(
    name: str, display: str, arch: str, published: int, source: str, unit: str, notes=()
) -> Profile:
    return Profile(
        name=name,
        display_name=display,
        family="cnn",
        sample_unit=unit,
        architecture=arch,
        published_params=published,
        published_source=source,
        default_global_batch=256,
        row_notes=CNN_ROWS,
        notes=tuple(notes),
    )


def alexnet() -> Profile:
    prof = _cnn(
        "alexnet",
        "AlexNet",
        f"Krizhevsky et al. 2012 (one-GPU variant of Krizhevsky 2014); {TV}.alexnet",
        61_100_840,
        "torchvision AlexNet_Weights.IMAGENET1K_V1 num_params",
        "one 224x224 RGB image",
    )
    x = conv(prof, "features.0", IMG224, 64, 11, s=4, p=2, bias=True, bn=None)
    x = pool(prof, "features.2", x, 3, 2)
    x = conv(prof, "features.3", x, 192, 5, p=2, bias=True, bn=None)
    x = pool(prof, "features.5", x, 3, 2)
    x = conv(prof, "features.6", x, 384, 3, p=1, bias=True, bn=None)
    x = conv(prof, "features.8", x, 256, 3, p=1, bias=True, bn=None)
    x = conv(prof, "features.10", x, 256, 3, p=1, bias=True, bn=None)
    x = pool(prof, "features.12", x, 3, 2)
    c, h, w = x  # AdaptiveAvgPool2d((6, 6)) is the identity at 224x224
    linear(prof, "classifier.1", c * h * w, 4096, act=RELU_F)
    linear(prof, "classifier.4", 4096, 4096, act=RELU_F)
    linear(prof, "classifier.6", 4096, 1000)
    return prof


def vgg16() -> Profile:
    prof = _cnn(
        "vgg16",
        "VGG-16",
        f"Simonyan & Zisserman 2015, configuration D (no BN); {TV}.vgg16",
        138_357_544,
        "torchvision VGG16_Weights.IMAGENET1K_V1 num_params",
        "one 224x224 RGB image",
    )
    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]
    x: Shape = IMG224
    idx = 0
    for v in cfg:
        if v == "M":
            x = pool(prof, f"features.{idx}", x, 2, 2)
            idx += 1
        else:
            x = conv(prof, f"features.{idx}", x, int(v), 3, p=1, bias=True, bn=None)
            idx += 2
    c, h, w = x  # AdaptiveAvgPool2d((7, 7)) is the identity at 224x224
    linear(prof, "classifier.0", c * h * w, 4096, act=RELU_F)
    linear(prof, "classifier.3", 4096, 4096, act=RELU_F)
    linear(prof, "classifier.6", 4096, 1000)
    return prof


def _resnet(
    prof: Profile, layers: list[int], groups: int = 1, width_per_group: int = 64
) -> Profile:
    x = conv(prof, "conv1", IMG224, 64, 7, s=2, p=3)
    x = pool(prof, "maxpool", x, 3, 2, p=1)
    for li, (planes, n) in enumerate(zip((64, 128, 256, 512), layers), start=1):
        for b in range(n):
            stride = 2 if (b == 0 and li > 1) else 1
            width = int(planes * (width_per_group / 64.0)) * groups
            pre = f"layer{li}.{b}"
            inp = x
            y = conv(prof, f"{pre}.conv1", inp, width, 1)
            y = conv(prof, f"{pre}.conv2", y, width, 3, s=stride, p=1, groups=groups)
            if b == 0:  # downsample branch (torchvision: conv1x1 + BN, before the add)
                conv(prof, f"{pre}.downsample.0", inp, planes * 4, 1, s=stride, act=0)
            x = conv(prof, f"{pre}.conv3", y, planes * 4, 1, residual=True)
    x = global_pool(prof, "avgpool", x)
    linear(prof, "fc", x[0], 1000)
    return prof


def resnet50() -> Profile:
    prof = _cnn(
        "resnet50",
        "ResNet-50",
        f"He et al. 2016 (bottleneck, stride on the 3x3 conv: v1.5); {TV}.resnet50",
        25_557_032,
        "torchvision ResNet50_Weights.IMAGENET1K_V1 num_params",
        "one 224x224 RGB image",
    )
    return _resnet(prof, [3, 4, 6, 3])


def resnet152() -> Profile:
    prof = _cnn(
        "resnet152",
        "ResNet-152",
        f"He et al. 2016 (bottleneck, stride on the 3x3 conv: v1.5); {TV}.resnet152",
        60_192_808,
        "torchvision ResNet152_Weights.IMAGENET1K_V1 num_params",
        "one 224x224 RGB image",
    )
    return _resnet(prof, [3, 8, 36, 3])


def resnext() -> Profile:
    prof = _cnn(
        "resnext",
        "ResNeXt-50 (32x4d)",
        f"Xie et al. 2017, cardinality 32, width 4; {TV}.resnext50_32x4d",
        25_028_904,
        "torchvision ResNeXt50_32X4D_Weights.IMAGENET1K_V1 num_params",
        "one 224x224 RGB image",
    )
    return _resnet(prof, [3, 4, 6, 3], groups=32, width_per_group=4)


def densenet121() -> Profile:
    prof = _cnn(
        "densenet121",
        "DenseNet-121",
        f"Huang et al. 2017, growth 32, blocks (6, 12, 24, 16), bn_size 4; {TV}.densenet121",
        7_978_856,
        "torchvision DenseNet121_Weights.IMAGENET1K_V1 num_params",
        "one 224x224 RGB image",
        notes=(
            "pre-activation BN+ReLU folded into the conv that follows it; norm5 is its own norm row",
        ),
    )
    growth, bn_size = 32, 4
    x = conv(prof, "features.conv0", IMG224, 64, 7, s=2, p=3)  # conv0 + norm0 + relu0
    x = pool(prof, "features.pool0", x, 3, 2, p=1)
    blocks = (6, 12, 24, 16)
    for bi, n in enumerate(blocks, start=1):
        c0, h, w = x
        for li in range(1, n + 1):
            cin = c0 + (li - 1) * growth
            pre = f"features.denseblock{bi}.denselayer{li}"
            y = conv(prof, f"{pre}.conv1", (cin, h, w), bn_size * growth, 1, bn="pre")
            conv(prof, f"{pre}.conv2", y, growth, 3, p=1, bn="pre")
        x = (c0 + n * growth, h, w)
        if bi < len(blocks):
            x = conv(prof, f"features.transition{bi}.conv", x, x[0] // 2, 1, bn="pre")
            x = pool(prof, f"features.transition{bi}.pool", x, 2, 2)
    c, h, w = x
    prof.add("features.norm5", "norm", 2 * c, (NORM_F + RELU_F) * c * h * w)
    x = global_pool(prof, "avgpool", x)
    linear(prof, "classifier", x[0], 1000)
    return prof


def mobilenet_v2() -> Profile:
    prof = _cnn(
        "mobilenet_v2",
        "MobileNetV2",
        f"Sandler et al. 2018, width 1.0; {TV}.mobilenet_v2",
        3_504_872,
        "torchvision MobileNet_V2_Weights.IMAGENET1K_V1 num_params",
        "one 224x224 RGB image",
    )
    x = conv(prof, "features.0", IMG224, 32, 3, s=2, p=1)  # ReLU6 counted like ReLU
    settings = [
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 4, 2),
        (6, 96, 3, 1),
        (6, 160, 3, 2),
        (6, 320, 1, 1),
    ]
    idx = 1
    for t, c, n, s in settings:
        for i in range(n):
            stride = s if i == 0 else 1
            cin = x[0]
            hidden = cin * t
            use_res = stride == 1 and cin == c
            pre = f"features.{idx}"
            y = x
            if t != 1:
                y = conv(prof, f"{pre}.expand", y, hidden, 1)
            y = conv(prof, f"{pre}.depthwise", y, hidden, 3, s=stride, p=1, groups=hidden)
            x = conv(prof, f"{pre}.project", y, c, 1, act=0, residual=use_res)
            idx += 1
    x = conv(prof, f"features.{idx}", x, 1280, 1)
    x = global_pool(prof, "avgpool", x)
    linear(prof, "classifier.1", x[0], 1000)
    return prof


def inception_v3() -> Profile:
    prof = _cnn(
        "inception_v3",
        "Inception-v3",
        f"Szegedy et al. 2016 (Rethinking the Inception Architecture); {TV}.inception_v3(aux_logits=True)",
        27_161_264,
        "torchvision Inception_V3_Weights.IMAGENET1K_V1 num_params (includes AuxLogits)",
        "one 299x299 RGB image",
        notes=(
            "branches of each Inception block listed in torchvision module order; "
            "AuxLogits (training only) placed after Mixed_6e as in torchvision",
        ),
    )

    def bc(name: str, x: Shape, cout: int, k, s: int = 1, p=0) -> Shape:
        return conv(prof, name, x, cout, k, s=s, p=p)  # BasicConv2d: conv(no bias)+BN+ReLU

    def cat(x: Shape, *chans: int) -> Shape:
        return (sum(chans), x[1], x[2])

    def block_a(pre: str, x: Shape, pool_features: int) -> Shape:
        bc(f"{pre}.branch1x1", x, 64, 1)
        y = bc(f"{pre}.branch5x5_1", x, 48, 1)
        bc(f"{pre}.branch5x5_2", y, 64, 5, p=2)
        y = bc(f"{pre}.branch3x3dbl_1", x, 64, 1)
        y = bc(f"{pre}.branch3x3dbl_2", y, 96, 3, p=1)
        bc(f"{pre}.branch3x3dbl_3", y, 96, 3, p=1)
        y = pool(prof, f"{pre}.avg_pool", x, 3, 1, p=1)
        bc(f"{pre}.branch_pool", y, pool_features, 1)
        return cat(x, 64, 64, 96, pool_features)

    def block_b(pre: str, x: Shape) -> Shape:
        o = bc(f"{pre}.branch3x3", x, 384, 3, s=2)
        y = bc(f"{pre}.branch3x3dbl_1", x, 64, 1)
        y = bc(f"{pre}.branch3x3dbl_2", y, 96, 3, p=1)
        bc(f"{pre}.branch3x3dbl_3", y, 96, 3, s=2)
        pool(prof, f"{pre}.max_pool", x, 3, 2)
        return cat(o, 384, 96, x[0])

    def block_c(pre: str, x: Shape, c7: int) -> Shape:
        bc(f"{pre}.branch1x1", x, 192, 1)
        y = bc(f"{pre}.branch7x7_1", x, c7, 1)
        y = bc(f"{pre}.branch7x7_2", y, c7, (1, 7), p=(0, 3))
        bc(f"{pre}.branch7x7_3", y, 192, (7, 1), p=(3, 0))
        y = bc(f"{pre}.branch7x7dbl_1", x, c7, 1)
        y = bc(f"{pre}.branch7x7dbl_2", y, c7, (7, 1), p=(3, 0))
        y = bc(f"{pre}.branch7x7dbl_3", y, c7, (1, 7), p=(0, 3))
        y = bc(f"{pre}.branch7x7dbl_4", y, c7, (7, 1), p=(3, 0))
        bc(f"{pre}.branch7x7dbl_5", y, 192, (1, 7), p=(0, 3))
        y = pool(prof, f"{pre}.avg_pool", x, 3, 1, p=1)
        bc(f"{pre}.branch_pool", y, 192, 1)
        return cat(x, 192, 192, 192, 192)

    def block_d(pre: str, x: Shape) -> Shape:
        y = bc(f"{pre}.branch3x3_1", x, 192, 1)
        o = bc(f"{pre}.branch3x3_2", y, 320, 3, s=2)
        y = bc(f"{pre}.branch7x7x3_1", x, 192, 1)
        y = bc(f"{pre}.branch7x7x3_2", y, 192, (1, 7), p=(0, 3))
        y = bc(f"{pre}.branch7x7x3_3", y, 192, (7, 1), p=(3, 0))
        bc(f"{pre}.branch7x7x3_4", y, 192, 3, s=2)
        pool(prof, f"{pre}.max_pool", x, 3, 2)
        return cat(o, 320, 192, x[0])

    def block_e(pre: str, x: Shape) -> Shape:
        bc(f"{pre}.branch1x1", x, 320, 1)
        y = bc(f"{pre}.branch3x3_1", x, 384, 1)
        bc(f"{pre}.branch3x3_2a", y, 384, (1, 3), p=(0, 1))
        bc(f"{pre}.branch3x3_2b", y, 384, (3, 1), p=(1, 0))
        y = bc(f"{pre}.branch3x3dbl_1", x, 448, 1)
        y = bc(f"{pre}.branch3x3dbl_2", y, 384, 3, p=1)
        bc(f"{pre}.branch3x3dbl_3a", y, 384, (1, 3), p=(0, 1))
        bc(f"{pre}.branch3x3dbl_3b", y, 384, (3, 1), p=(1, 0))
        y = pool(prof, f"{pre}.avg_pool", x, 3, 1, p=1)
        bc(f"{pre}.branch_pool", y, 192, 1)
        return cat(x, 320, 768, 768, 192)

    x: Shape = (3, 299, 299)
    x = bc("Conv2d_1a_3x3", x, 32, 3, s=2)
    x = bc("Conv2d_2a_3x3", x, 32, 3)
    x = bc("Conv2d_2b_3x3", x, 64, 3, p=1)
    x = pool(prof, "maxpool1", x, 3, 2)
    x = bc("Conv2d_3b_1x1", x, 80, 1)
    x = bc("Conv2d_4a_3x3", x, 192, 3)
    x = pool(prof, "maxpool2", x, 3, 2)
    x = block_a("Mixed_5b", x, 32)
    x = block_a("Mixed_5c", x, 64)
    x = block_a("Mixed_5d", x, 64)
    x = block_b("Mixed_6a", x)
    x = block_c("Mixed_6b", x, 128)
    x = block_c("Mixed_6c", x, 160)
    x = block_c("Mixed_6d", x, 160)
    x = block_c("Mixed_6e", x, 192)
    # AuxLogits (InceptionAux): avg_pool 5/3, conv0 1x1 -> 128, conv1 5x5 -> 768, fc.
    a = pool(prof, "AuxLogits.avg_pool", x, 5, 3)
    a = bc("AuxLogits.conv0", a, 128, 1)
    a = bc("AuxLogits.conv1", a, 768, 5)
    a = global_pool(prof, "AuxLogits.adaptive_avg_pool", a)
    linear(prof, "AuxLogits.fc", a[0], 1000)
    x = block_d("Mixed_7a", x)
    x = block_e("Mixed_7b", x)
    x = block_e("Mixed_7c", x)
    x = global_pool(prof, "avgpool", x)
    linear(prof, "fc", x[0], 1000)
    return prof


def googlenet() -> Profile:
    prof = _cnn(
        "googlenet",
        "GoogLeNet (Inception-v1)",
        f"Szegedy et al. 2015 with BN (torchvision variant, 3x3 in the '5x5' branch); {TV}.googlenet",
        6_624_904,
        "torchvision GoogLeNet_Weights.IMAGENET1K_V1 num_params (aux classifiers removed)",
        "one 224x224 RGB image",
        notes=("aux classifiers omitted, as in torchvision's published weights",),
    )

    def bc(name: str, x: Shape, cout: int, k: int, s: int = 1, p: int = 0) -> Shape:
        return conv(prof, name, x, cout, k, s=s, p=p)

    def inception(
        pre: str, x: Shape, c1: int, c3r: int, c3: int, c5r: int, c5: int, pp: int
    ) -> Shape:
        bc(f"{pre}.branch1", x, c1, 1)
        y = bc(f"{pre}.branch2.0", x, c3r, 1)
        bc(f"{pre}.branch2.1", y, c3, 3, p=1)
        y = bc(f"{pre}.branch3.0", x, c5r, 1)
        bc(f"{pre}.branch3.1", y, c5, 3, p=1)
        y = pool(prof, f"{pre}.branch4.0", x, 3, 1, p=1, ceil=True)
        bc(f"{pre}.branch4.1", y, pp, 1)
        return (c1 + c3 + c5 + pp, x[1], x[2])

    x = bc("conv1", IMG224, 64, 7, s=2, p=3)
    x = pool(prof, "maxpool1", x, 3, 2, ceil=True)
    x = bc("conv2", x, 64, 1)
    x = bc("conv3", x, 192, 3, p=1)
    x = pool(prof, "maxpool2", x, 3, 2, ceil=True)
    x = inception("inception3a", x, 64, 96, 128, 16, 32, 32)
    x = inception("inception3b", x, 128, 128, 192, 32, 96, 64)
    x = pool(prof, "maxpool3", x, 3, 2, ceil=True)
    x = inception("inception4a", x, 192, 96, 208, 16, 48, 64)
    x = inception("inception4b", x, 160, 112, 224, 24, 64, 64)
    x = inception("inception4c", x, 128, 128, 256, 24, 64, 64)
    x = inception("inception4d", x, 112, 144, 288, 32, 64, 64)
    x = inception("inception4e", x, 256, 160, 320, 32, 128, 128)
    x = pool(prof, "maxpool4", x, 2, 2, ceil=True)
    x = inception("inception5a", x, 256, 160, 320, 32, 128, 128)
    x = inception("inception5b", x, 384, 192, 384, 48, 128, 128)
    x = global_pool(prof, "avgpool", x)
    linear(prof, "fc", x[0], 1000)
    return prof


# ---------------------------------------------------------------------------
# Transformers.
# ---------------------------------------------------------------------------


def _attention(
    prof: Profile, name: str, L: int, d: int, heads: int, fused_qkv_params: bool = False
) -> None:
    """Append one self-attention row: 4 projections (with bias) + scores + softmax + context + residual add."""
    params = 4 * (d * d + d)
    flops = 4 * L * (2 * d * d + d)  # Q, K, V and output projections
    flops += 2 * L * L * d  # Q @ K^T over all heads
    flops += heads * L * L * (1 + 1 + SOFTMAX_F)  # scale, mask add, softmax
    flops += 2 * L * L * d  # probs @ V
    flops += ADD_F * L * d  # residual add
    prof.add(name, "attention", params, flops)


def _layernorm(prof: Profile, name: str, L: int, d: int, extra: int = 0) -> None:
    prof.add(name, "norm", 2 * d, NORM_F * L * d + extra)


def bert_base() -> Profile:
    L, d, heads, dff, layers, vocab = 128, 768, 12, 3072, 12, 30522
    prof = Profile(
        name="bert_base",
        display_name="BERT-base (uncased)",
        family="transformer",
        sample_unit="one 128-token sequence",
        architecture="Devlin et al. 2019, BERT-base; Hugging Face transformers BertModel, config bert-base-uncased",
        published_params=109_482_240,
        published_source="Hugging Face bert-base-uncased BertModel.num_parameters() (with pooler)",
        default_global_batch=32,
        row_notes=TRANSFORMER_ROWS,
        notes=(
            "BertModel only (encoder + pooler): MLM/NSP pre-training heads and task heads are not included",
        ),
    )
    prof.add("embeddings.word_embeddings", "embedding", vocab * d, 0)
    prof.add("embeddings.position_embeddings", "embedding", 512 * d, 0)
    prof.add("embeddings.token_type_embeddings", "embedding", 2 * d, 0)
    _layernorm(
        prof, "embeddings.LayerNorm", L, d, extra=2 * ADD_F * L * d
    )  # sum of the three embeddings
    for i in range(layers):
        pre = f"encoder.layer.{i}"
        _attention(prof, f"{pre}.attention", L, d, heads)
        _layernorm(prof, f"{pre}.attention.output.LayerNorm", L, d)
        linear(prof, f"{pre}.intermediate.dense", d, dff, tokens=L, act=GELU_F)
        linear(prof, f"{pre}.output.dense", dff, d, tokens=L, residual=True)
        _layernorm(prof, f"{pre}.output.LayerNorm", L, d)
    linear(prof, "pooler.dense", d, d, tokens=1, act=TANH_F)  # first token only
    return prof


def gpt2_small() -> Profile:
    L, d, heads, dff, layers, vocab, npos = 1024, 768, 12, 3072, 12, 50257, 1024
    prof = Profile(
        name="gpt2_small",
        display_name="GPT-2 small",
        family="transformer",
        sample_unit="one 1024-token sequence",
        architecture="Radford et al. 2019, GPT-2 124M; Hugging Face transformers GPT2LMHeadModel, config gpt2",
        published_params=124_439_808,
        published_source="Hugging Face gpt2 GPT2LMHeadModel.num_parameters() (LM head tied to wte)",
        default_global_batch=8,
        row_notes=TRANSFORMER_ROWS,
        notes=(
            "pre-LayerNorm blocks; causal attention counted over the full 1024x1024 score matrix",
            "lm_head is tied to wte: 0 params in its row, full 2*L*d*V FLOPs",
        ),
    )
    prof.add("transformer.wte", "embedding", vocab * d, 0)
    prof.add("transformer.wpe", "embedding", npos * d, 0)
    for i in range(layers):
        pre = f"transformer.h.{i}"
        extra = ADD_F * L * d if i == 0 else 0  # wte + wpe sum
        _layernorm(prof, f"{pre}.ln_1", L, d, extra=extra)
        _attention(prof, f"{pre}.attn", L, d, heads)
        _layernorm(prof, f"{pre}.ln_2", L, d)
        linear(prof, f"{pre}.mlp.c_fc", d, dff, tokens=L, act=GELU_F)
        linear(prof, f"{pre}.mlp.c_proj", dff, d, tokens=L, residual=True)
    _layernorm(prof, "transformer.ln_f", L, d)
    linear(prof, "lm_head", d, vocab, tokens=L, bias=False, params=0)
    return prof


# ---------------------------------------------------------------------------
# LSTM language model.
# ---------------------------------------------------------------------------

LSTM_PUBLISHED = 50_065_078


def lstm_lm() -> Profile:
    T, vocab, emb, hidden, nlayers = 35, 33278, 650, 650, 2
    prof = Profile(
        name="lstm_lm",
        display_name="2-layer LSTM LM (medium)",
        family="rnn",
        sample_unit="one 35-token sequence (bptt 35)",
        architecture=(
            "Zaremba et al. 2014 medium LSTM; pytorch/examples word_language_model RNNModel "
            "(LSTM, emsize 650, nhid 650, nlayers 2, WikiText-2 vocab 33278, untied weights)"
        ),
        published_params=LSTM_PUBLISHED,
        published_source=(
            "no official figure: derived from pytorch/examples word_language_model/model.py "
            "(V*E + per layer 4H(in+H)+8H + H*V+V)"
        ),
        default_global_batch=64,
        row_notes="one lstm row per layer over the whole sequence; encoder embedding and decoder fc rows",
        notes=(
            "untied: the decoder has its own 650x33278 weight (--tied would remove 21,630,700 params)",
        ),
    )
    prof.add("encoder", "embedding", vocab * emb, 0)
    fin = emb
    for layer in range(nlayers):
        params = 4 * hidden * (fin + hidden) + 2 * 4 * hidden  # W_ih, W_hh, b_ih, b_hh
        per_step = 2 * 4 * hidden * (fin + hidden) + 2 * 4 * hidden  # gate matmuls + both biases
        per_step += 3 * hidden * SIGMOID_F + hidden * TANH_F  # i, f, o gates; g
        per_step += 3 * hidden + hidden * TANH_F + hidden  # c = f*c + i*g; h = o*tanh(c)
        prof.add(f"rnn.layer{layer}", "lstm", params, T * per_step)
        fin = hidden
    linear(prof, "decoder", hidden, vocab, tokens=T)
    return prof


# ---------------------------------------------------------------------------
# Output.
# ---------------------------------------------------------------------------

BUILDERS = (
    alexnet,
    vgg16,
    resnet50,
    resnet152,
    inception_v3,
    densenet121,
    mobilenet_v2,
    bert_base,
    gpt2_small,
    lstm_lm,
    resnext,
    googlenet,
)

INDEX_COLUMNS = (
    "name",
    "display_name",
    "family",
    "sample_unit",
    "layers",
    "params",
    "published_params",
    "published_source",
    "default_global_batch",
)


def build_all() -> list[Profile]:
    """Build every profile, in index order."""
    return [b() for b in BUILDERS]


def render_profile(prof: Profile) -> str:
    """Return the CSV text of one profile (comment header + rows)."""
    lines = [
        f"# network: {prof.display_name} ({prof.name})",
        "# produced by: python tools/build_profiles.py",
        f"# architecture: {prof.architecture}",
        f"# sample unit: {prof.sample_unit}",
        f"# published params: {prof.published_params} ({prof.published_source})",
        f"# computed params: {prof.params}; forward FLOPs per sample: {float(prof.flops):.6e}",
        f"# FLOP conventions: {CONVENTIONS}",
        f"# rows: {prof.row_notes}",
    ]
    lines += [f"# note: {n}" for n in prof.notes]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["layer", "kind", "params", "forward_flops"])
    for r in prof.rows:
        w.writerow([r.layer, r.kind, r.params, f"{float(r.flops):.1f}"])
    return "\n".join(lines) + "\n" + buf.getvalue()


def render_index(profiles: list[Profile]) -> str:
    """Return the CSV text of index.csv."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(INDEX_COLUMNS)
    for p in profiles:
        w.writerow(
            [
                p.name,
                p.display_name,
                p.family,
                p.sample_unit,
                len(p.rows),
                p.params,
                p.published_params,
                p.published_source,
                p.default_global_batch,
            ]
        )
    return buf.getvalue()


def summary_table(profiles: list[Profile]) -> str:
    """Markdown table of computed vs published params and forward GFLOPs."""
    out = [
        "| name | rows | computed params | published params | rel. error | forward GFLOPs / sample | sample |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for p in profiles:
        err = (p.params - p.published_params) / p.published_params
        out.append(
            f"| {p.name} | {len(p.rows)} | {p.params:,} | {p.published_params:,} | {err:+.4%} | "
            f"{p.flops / 1e9:.3f} | {p.sample_unit} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="output directory (default: data/profiles)"
    )
    args = ap.parse_args(argv)
    profiles = build_all()
    bad = [p.name for p in profiles if len(p.rows) > 250]
    if bad:
        raise SystemExit(f"too many rows: {bad}")
    args.out.mkdir(parents=True, exist_ok=True)
    for p in profiles:
        (args.out / f"{p.name}.csv").write_text(render_profile(p), encoding="utf-8")
    (args.out / "index.csv").write_text(render_index(profiles), encoding="utf-8")
    print(summary_table(profiles))
    return 0


if __name__ == "__main__":
    sys.exit(main())
