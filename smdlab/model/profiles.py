"""Per-layer profiles of DNNs: forward/backward time per sample and parameter bytes."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from smdlab.caches import BUNDLED_PROFILES, PROFILE_INDEX, memoize
from smdlab.errors import InvalidInput, check_choice, check_positive
from smdlab.paths import data_dir

BYTES_PER_PARAM = 4  # fp32 parameters and gradients


def _frozen_array(field_name: str, values: ArrayLike, n: int) -> np.ndarray:
    try:
        arr = np.array(values, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise InvalidInput(
            f"{field_name} must be a sequence of numbers, one per layer; got {values!r}"
        ) from None
    if arr.size != n:
        raise InvalidInput(f"{field_name} must have one entry per layer ({n}), got {arr.size}")
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidInput(f"{field_name}[{i}] must be finite and >= 0, got {float(arr[i])!r}")
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class LayerProfile:
    """Layers of a network, input side first, with per-sample times on a reference device.

    names: layer names, input side first.
    forward_s: forward time per sample of each layer (seconds on ``device``).
    backward_s: backward time per sample of each layer (seconds on ``device``).
    param_bytes: parameter (= gradient) bytes of each layer.
    update_s_per_byte: PS time to aggregate one received gradient byte (0: free).
    device: name of the device the times refer to.
    network: name of the network (bundled profile name, or user-chosen).
    """

    names: tuple[str, ...]
    forward_s: np.ndarray
    backward_s: np.ndarray
    param_bytes: np.ndarray
    update_s_per_byte: float = 0.0
    device: str = "custom"
    network: str = "custom"
    kinds: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if isinstance(self.names, str) or not hasattr(self.names, "__iter__"):
            raise InvalidInput(f"names must be a sequence of layer names, got {self.names!r}")
        names = tuple(str(n) for n in self.names)
        if not names:
            raise InvalidInput("names must list at least one layer, got 0")
        n = len(names)
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "forward_s", _frozen_array("forward_s", self.forward_s, n))
        object.__setattr__(self, "backward_s", _frozen_array("backward_s", self.backward_s, n))
        object.__setattr__(self, "param_bytes", _frozen_array("param_bytes", self.param_bytes, n))
        check_positive("update_s_per_byte", self.update_s_per_byte, allow_zero=True)
        kinds = tuple(self.kinds) if self.kinds else ("other",) * n
        if len(kinds) != n:
            raise InvalidInput(f"kinds must have one entry per layer ({n}), got {len(kinds)}")
        object.__setattr__(self, "kinds", kinds)
        if self.forward_s.sum() + self.backward_s.sum() <= 0:
            raise InvalidInput("forward_s and backward_s must not all be 0 (a network takes time)")

    @property
    def fingerprint(self) -> str:
        """A digest of every field: equal fingerprints, equal profiles (the caches' key for a profile)."""
        found = self.__dict__.get("_fingerprint")
        if found is None:
            h = hashlib.blake2b(digest_size=16)
            for part in (self.names, self.kinds, (self.device, self.network)):
                h.update(repr(part).encode())
            for arr in (self.forward_s, self.backward_s, self.param_bytes):
                h.update(arr.tobytes())
            h.update(float(self.update_s_per_byte).hex().encode())
            found = h.hexdigest()
            object.__setattr__(self, "_fingerprint", found)  # memo: the profile is immutable
        return found

    @property
    def layers(self) -> int:
        """Number of layers."""
        return len(self.names)

    @property
    def total_param_bytes(self) -> float:
        """Parameter bytes of the whole network."""
        return float(self.param_bytes.sum())

    @property
    def forward_total_s(self) -> float:
        """Forward time per sample of the whole network."""
        return float(self.forward_s.sum())

    @property
    def backward_total_s(self) -> float:
        """Backward time per sample of the whole network."""
        return float(self.backward_s.sum())

    def scaled(
        self, compute: float = 1.0, params: float = 1.0, name: str | None = None
    ) -> LayerProfile:
        """Return a copy with every layer's times times ``compute`` and bytes times ``params``."""
        check_positive("compute", compute)
        check_positive("params", params)
        return LayerProfile(
            self.names,
            self.forward_s * compute,
            self.backward_s * compute,
            self.param_bytes * params,
            update_s_per_byte=self.update_s_per_byte,
            device=self.device,
            network=name or self.network,
            kinds=self.kinds,
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per layer: name, kind, forward_s, backward_s, param_bytes."""
        return pd.DataFrame(
            {
                "layer": self.names,
                "kind": self.kinds,
                "forward_s": self.forward_s,
                "backward_s": self.backward_s,
                "param_bytes": self.param_bytes,
            }
        )

    @classmethod
    def load(cls, name: str, device: str = "v100") -> LayerProfile:
        """Load the bundled profile ``name`` with times for ``device``."""
        from smdlab.model.devices import get_device

        check_choice("profile", name, list_profiles())  # before the cache: a list is not hashable
        get_device(device)
        return _load(name, device)


def _profiles_dir():
    return data_dir() / "profiles"


@memoize(PROFILE_INDEX)
def _index() -> pd.DataFrame:
    return pd.read_csv(_profiles_dir() / "index.csv").set_index("name")


def list_profiles() -> list[str]:
    """Names of the bundled network profiles."""
    return sorted(_index().index)


def profile_info(name: str) -> dict:
    """Index entry of a bundled profile (display name, family, sample unit, published params, ...)."""
    check_choice("profile", name, list_profiles())
    return {"name": name, **_index().loc[name].to_dict()}


@memoize(BUNDLED_PROFILES)
def _load(name: str, device: str) -> LayerProfile:
    from smdlab.model.devices import get_device

    check_choice("profile", name, list_profiles())
    dev = get_device(device)
    table = pd.read_csv(_profiles_dir() / f"{name}.csv", comment="#")
    fwd = np.array([dev.forward_time(k, f) for k, f in zip(table["kind"], table["forward_flops"])])
    return LayerProfile(
        names=tuple(table["layer"]),
        forward_s=fwd,
        backward_s=fwd * dev.backward_factor,
        param_bytes=table["params"].to_numpy(dtype=float) * BYTES_PER_PARAM,
        device=device,
        network=name,
        kinds=tuple(table["kind"]),
    )
