"""The built-in communication policies (docs/network.md): fair, scf, lcof, crux and jcs."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from smdlab.model.fabric import FabricState

__all__ = [
    "CommunicationPolicy",
    "Crux",
    "Fair",
    "JcsInspired",
    "LeastContentionFirst",
    "SmallestCoflowFirst",
]


class CommunicationPolicy:
    """The contract: ``scores(state)`` gives one number per running job; lower is served first."""

    name: ClassVar[str] = ""

    def scores(self, state: FabricState) -> np.ndarray:
        """One score per row of ``state`` (equal scores share a priority level)."""
        raise NotImplementedError


class Fair(CommunicationPolicy):
    """One level for every job: max-min fair sharing (the fabric's default)."""

    name = "fair"

    def scores(self, state: FabricState) -> np.ndarray:
        """Every job the same score."""
        return np.zeros(len(state.jobs))


class SmallestCoflowFirst(CommunicationPolicy):
    """SCF: the shortest coflow first, its length being its largest per-link volume per iteration.

    As in coflow/coflowsim's and Sincronia's SCF (both order by length; by total size is their
    LCF and TCF); ties by total volume.
    """

    name = "scf"

    def scores(self, state: FabricState) -> np.ndarray:
        """Largest bytes per iteration on one shared link, ties broken by total bytes."""
        vol = state.volume.sum(axis=1)
        return state.volume.max(axis=1, initial=0.0) + vol / (1.0 + vol.max(initial=0.0)) * 1e-6


class LeastContentionFirst(CommunicationPolicy):
    """LCoF (after Saath): the job that shares its links with the fewest other jobs first.

    Contention of a job: how many other jobs use at least one of its links; ties by volume.
    """

    name = "lcof"

    def scores(self, state: FabricState) -> np.ndarray:
        """Contention count, ties broken by total volume."""
        from scipy.sparse import csr_matrix

        uses = csr_matrix((state.volume > 0).astype(np.float64))  # a job uses few links
        shared = uses @ uses.T  # nonzero where two jobs share a link
        contention = np.diff(shared.indptr) - (state.volume > 0).any(axis=1)  # others only
        vol = state.volume.sum(axis=1)
        return contention + vol / (1.0 + vol.max(initial=0.0))  # volume in [0, 1): ties only


class Crux(CommunicationPolicy):
    """Crux: GPU intensity I_j = W_j / t_j, corrected: P_j = k_j I_j; highest first.

    W_j: GPU compute seconds per iteration (GPUs x compute time). t_j: transfer time per
    iteration alone on its bottleneck shared link. k_j = compute_s / tau0: the fraction of its
    uncontended iteration the job's GPUs compute (smdlab's correction for iteration length and
    overlap; Crux fits its own). The fabric has one path per machine pair, so there is no path to
    choose.
    """

    name = "crux"

    def scores(self, state: FabricState) -> np.ndarray:
        """Minus the corrected intensity (a job without shared traffic scores lowest)."""
        t = state.transfer_s
        work = state.gpus * state.compute_s
        k = np.minimum(1.0, state.compute_s / state.tau0)
        with np.errstate(divide="ignore"):
            intensity = np.where(t > 0, work / np.where(t > 0, t, 1.0), np.inf)
        return -(k * intensity)


class JcsInspired(CommunicationPolicy):
    """Inspired by JCS (Chen, Yang, Xu, HPCC 2020): priority from computation and communication.

    JCS's formula is not public; this one serves first the job with the least remaining time
    alone, remaining iterations x (compute seconds + bottleneck transfer seconds) per iteration,
    the two parts the abstract names.
    """

    name = "jcs"

    def scores(self, state: FabricState) -> np.ndarray:
        """Remaining iterations times (compute + bottleneck transfer) seconds per iteration."""
        return state.remaining_iterations * (state.compute_s + state.transfer_s)
