"""Accelerator compute model: per-layer-kind forward time from FLOPs.

Convention: ``peak_flops`` is the dense FP16/BF16 tensor-core peak of the
SXM part (mixed-precision training, the usual way both GPUs are used), and
``efficiency[kind]`` is the fraction of that peak a layer of that kind
reaches in training.  Time per sample for one layer is::

    forward_time = flops / (peak_flops * efficiency[kind])
    backward_time ~= backward_factor * forward_time   (backward_factor = 2)

The kinds are those of the bundled profiles (``data/profiles/*.csv``).
Embedding rows carry 0 forward FLOPs, so they cost no compute time in either
direction here; their backward is a sparse scatter-add whose real cost is
memory traffic and (dense) gradient communication, which is modelled outside
the device.  Memory bandwidth, interconnect and memory capacity are
deliberately not part of a device; bandwidth only enters through the low
efficiencies of memory-bound kinds (about 1 FLOP per byte of HBM traffic, so
``efficiency ~= HBM bandwidth / peak``).

Calibration: the conv efficiencies reproduce NVIDIA DeepLearningExamples
ResNet-50 v1.5 PyTorch single-GPU mixed-precision training throughput
(V100 16GB: 1,200 img/s; A100 80GB: 2,470 img/s) with the bundled ResNet-50
profile (8.25 GFLOPs forward, x3 for forward+backward).  The other GEMM
kinds are estimates, not measurements.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from smdlab.errors import InvalidInput

__all__ = ["DEVICES", "KINDS", "Device", "get_device"]

KINDS: tuple[str, ...] = ("conv", "fc", "attention", "embedding", "norm", "lstm", "pool", "other")

_V100_SOURCE = (
    "NVIDIA Tesla V100 GPU Accelerator datasheet (SXM2): 125 TFLOPS tensor (mixed precision), "
    "15.7 TFLOPS FP32, 900 GB/s HBM2; conv efficiency calibrated on NVIDIA DeepLearningExamples "
    "PyTorch ResNet-50 v1.5 (1x V100 16GB, AMP, 1,200 img/s)"
)
_A100_SOURCE = (
    "NVIDIA A100 Tensor Core GPU datasheet (SXM4): 312 TFLOPS FP16/BF16 tensor dense "
    "(156 TF32, 19.5 FP32), 1,555 GB/s (40GB) / 2,039 GB/s (80GB) HBM2e; conv efficiency calibrated "
    "on NVIDIA DeepLearningExamples PyTorch ResNet-50 v1.5 (1x A100 80GB, AMP, 2,470 img/s)"
)


@dataclass(frozen=True)
class Device:
    """One accelerator: a peak FLOP rate and per-layer-kind efficiencies."""

    name: str
    display_name: str
    peak_flops: float
    efficiency: Mapping[str, float] = field(hash=False)
    backward_factor: float = 2.0
    source: str = ""
    # Intra-machine link one GPU drives into its ring neighbour, per direction (Gbps, 1e9 bit/s):
    # the B of an all-reduce ring that sits on one machine (smdlab.model.allreduce).
    links_gbps: Mapping[str, float] = field(hash=False, default_factory=dict)
    links_source: str = ""

    def __post_init__(self) -> None:
        """Validate the peak and efficiencies and freeze the mapping."""
        if not self.peak_flops > 0:
            raise InvalidInput(f"peak_flops must be > 0, got {self.peak_flops!r}")
        missing = [k for k in KINDS if k not in self.efficiency]
        if missing:
            raise InvalidInput(f"efficiency is missing kinds {missing}")
        bad = {k: v for k, v in self.efficiency.items() if not 0 < v <= 1}
        if bad:
            raise InvalidInput(f"efficiency values must lie in (0, 1], got {bad}")
        object.__setattr__(self, "efficiency", MappingProxyType(dict(self.efficiency)))
        bad_links = {k: v for k, v in self.links_gbps.items() if not v > 0}
        if bad_links:
            raise InvalidInput(f"links_gbps values must be > 0, got {bad_links}")
        object.__setattr__(self, "links_gbps", MappingProxyType(dict(self.links_gbps)))

    def link_gbps(self, link: str) -> float:
        """Per-direction bandwidth (Gbps) of the intra-machine ``link`` (``nvlink`` or ``pcie``)."""
        if link not in self.links_gbps:
            raise InvalidInput(
                f"interconnect must be one of {', '.join(sorted(self.links_gbps))}; got {link!r}"
            )
        return self.links_gbps[link]

    def forward_time(self, kind: str, flops: float) -> float:
        """Forward seconds per sample for a layer of ``kind`` doing ``flops`` FLOPs."""
        if kind not in self.efficiency:
            raise InvalidInput(
                f"kind must be one of {', '.join(sorted(self.efficiency))}; got {kind!r}"
            )
        return flops / (self.peak_flops * self.efficiency[kind])


# Efficiencies (fraction of the tensor-core peak), one reason each:
_V100_EFF = {
    "conv": 0.24,  # calibrated: 1,200 img/s x 24.8 GFLOP/img (ResNet-50 AMP) = 29.7 TFLOPS of 125
    "fc": 0.35,  # large dense GEMMs run well on tensor cores but rarely above ~40% end to end
    "attention": 0.25,  # batched head-dim-64 GEMMs plus memory-bound softmax/masking
    "lstm": 0.10,  # sequential per-timestep GEMMs with small batch dimension, latency bound
    "embedding": 0.0072,  # memory-bound gather: ~1 FLOP/byte x 900 GB/s / 125 TFLOPS
    "norm": 0.0072,  # memory-bound elementwise: ~1 FLOP/byte x 900 GB/s / 125 TFLOPS
    "pool": 0.0072,  # memory-bound window reduction: same bandwidth bound
    "other": 0.0072,  # generic elementwise: same bandwidth bound
}
_A100_EFF = {
    "conv": 0.20,  # calibrated: 2,470 img/s x 24.8 GFLOP/img (ResNet-50 AMP) = 61 TFLOPS of 312
    "fc": 0.35,  # large dense GEMMs; same achievable fraction assumed as on V100
    "attention": 0.25,  # batched head-dim-64 GEMMs plus memory-bound softmax/masking
    "lstm": 0.08,  # sequential small GEMMs leave even more of the larger chip idle
    "embedding": 0.005,  # memory-bound gather: ~1 FLOP/byte x 1,555 GB/s / 312 TFLOPS
    "norm": 0.005,  # memory-bound elementwise: ~1 FLOP/byte x 1,555 GB/s / 312 TFLOPS
    "pool": 0.005,  # memory-bound window reduction: same bandwidth bound
    "other": 0.005,  # generic elementwise: same bandwidth bound
}

# Intra-machine links, per direction, as the bandwidth one GPU can push to its ring neighbour.
# NVLink: the GPU's aggregate NVLink bandwidth halved (NCCL builds rings over all of a GPU's links).
# PCIe: a x16 slot after line encoding (Gen3 8 GT/s and Gen4 16 GT/s, 128b/130b).
_V100_LINKS = {"nvlink": 150 * 8.0, "pcie": 15.75 * 8}
_V100_LINKS_SOURCE = (
    "NVIDIA Tesla V100 datasheet: NVLink 300 GB/s (6 NVLink 2.0 links, both directions), so 150 GB/s "
    "per direction; PCIe 3.0 x16: 8 GT/s x 16 lanes x 128/130 = 15.75 GB/s per direction (PCI-SIG)"
)
_A100_LINKS = {"nvlink": 300 * 8.0, "pcie": 31.5 * 8}
_A100_LINKS_SOURCE = (
    "NVIDIA A100 datasheet: NVLink 600 GB/s (12 NVLink 3.0 links, both directions), so 300 GB/s per "
    "direction; PCIe 4.0 x16: 16 GT/s x 16 lanes x 128/130 = 31.5 GB/s per direction (PCI-SIG)"
)

DEVICES: dict[str, Device] = {
    "v100": Device(
        name="v100",
        display_name="NVIDIA V100 SXM2 (mixed precision)",
        peak_flops=125e12,
        efficiency=_V100_EFF,
        backward_factor=2.0,
        source=_V100_SOURCE,
        links_gbps=_V100_LINKS,
        links_source=_V100_LINKS_SOURCE,
    ),
    "a100": Device(
        name="a100",
        display_name="NVIDIA A100 SXM4 (mixed precision)",
        peak_flops=312e12,
        efficiency=_A100_EFF,
        backward_factor=2.0,
        source=_A100_SOURCE,
        links_gbps=_A100_LINKS,
        links_source=_A100_LINKS_SOURCE,
    ),
}


def get_device(name: str) -> Device:
    """Return the device called ``name`` or raise ``InvalidInput`` naming the allowed set."""
    try:
        return DEVICES[name]
    except (KeyError, TypeError):
        raise InvalidInput(
            f"device must be one of {', '.join(sorted(DEVICES))}; got {name!r}"
        ) from None
