"""Data a training job sends across rack uplinks per iteration (``cross_rack_gb`` accounting).

PS architecture: every iteration each worker pushes its gradient (P bytes, the model's
parameters) and pulls the parameters (P bytes), split evenly over the ``ps`` PSs, so a
(worker, PS) pair exchanges ``2 P / ps``; the pairs on machines of different racks cross uplinks.
Ring all-reduce: each worker sends ``2 (n - 1) / n * P`` per iteration along the ring; with the
ring ordered rack by rack, a ring spanning k > 1 racks crosses k rack boundaries, each carrying
that amount.

Uplinks in the timing model (``Uplinks``, docs/model.md, Rack uplinks): traffic that leaves a
rack shares the rack's effective uplink (``uplink_gbps / oversubscription``) with every machine of
the rack in proportion to NIC capacity, as when all of them send at once (the load an
oversubscribed uplink is sized against): a task's flows out of its rack get its NIC share divided
by the rack's ratio ``rho = max(1, sum of the rack's NIC bw_gbps / effective uplink)``, and
likewise for a declared domain's uplink. A worker sending a fraction f of its traffic across a
link of ratio rho needs ``f * rho`` times its NIC time there, so the layered model's worker link
becomes ``B_w / max(1, max over its links f * rho)`` (the slowest link on its path) and the PS
link likewise with the fraction of its workers across; the job's slowest worker and PS set them
(synchronous training). A ring all-reduce that spans racks runs each hop at the slowest link:
``B / max rho`` over the racks (and domains) it spans.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from smdlab.model.cluster import Cluster
from smdlab.model.job import Job

__all__ = ["Uplinks", "cross_rack_bytes_per_iteration"]


def cross_rack_bytes_per_iteration(
    job: Job, tasks: Sequence[tuple[int, int, int]], rack_of: Sequence[int]
) -> float:
    """Bytes one iteration of ``job`` at placement ``tasks`` sends across rack boundaries."""
    size = float(job.profile.param_bytes.sum())
    if job.arch == "allreduce":
        n = sum(w for _, w, _ in tasks)
        racks = {rack_of[m] for m, w, _ in tasks if w > 0}
        if n < 2 or len(racks) < 2:
            return 0.0
        return len(racks) * 2.0 * (n - 1) / n * size
    ps = sum(p for _, _, p in tasks)
    if ps == 0:
        return 0.0
    cross_pairs = sum(
        w * p for m1, w, _ in tasks for m2, _, p in tasks if w and p and rack_of[m1] != rack_of[m2]
    )
    return cross_pairs * 2.0 * size / ps


@dataclass(frozen=True, eq=False)
class Uplinks:
    """A racked cluster's uplinks as the timing model reads them (module docstring).

    rack_of: rack index per machine. domain_of: declared-domain index per machine (-1: none).
    rack_ratio: rho per rack. domain_ratio: rho per declared domain.
    """

    rack_of: tuple[int, ...]
    domain_of: tuple[int, ...]
    rack_ratio: tuple[float, ...]
    domain_ratio: tuple[float, ...]

    @classmethod
    def of(cls, cluster: Cluster) -> Uplinks | None:
        """The uplinks of ``cluster``; None for a flat cluster or one without ``bw_gbps``."""
        if not cluster.topology or "bw_gbps" not in cluster.resources:
            return None
        rack_of = np.array(cluster.rack_of, dtype=np.int64)
        nic = np.array([m.capacity["bw_gbps"] for m in cluster.machines], dtype=float)
        rack_nic = np.bincount(rack_of, weights=nic, minlength=len(cluster.topology))
        rack_ratio = [
            max(1.0, float(n) / r.effective_uplink_gbps)
            for n, r in zip(rack_nic, cluster.topology, strict=True)
        ]
        index = {d.name: i for i, d in enumerate(cluster.domains)}
        rack_domain = np.array([index.get(r.domain, -1) for r in cluster.topology], dtype=np.int64)
        domain_of = rack_domain[rack_of]
        domain_ratio = []
        for i, d in enumerate(cluster.domains):
            n = float(nic[domain_of == i].sum())
            domain_ratio.append(max(1.0, n / d.effective_uplink_gbps))
        return cls(
            tuple(rack_of.tolist()),
            tuple(domain_of.tolist()),
            tuple(rack_ratio),
            tuple(domain_ratio),
        )

    def _ratio(self, m: int, out_rack: float, out_domain: float) -> float:
        """Largest f * rho over machine m's rack and domain uplinks (f: fraction sent across)."""
        worst = out_rack * self.rack_ratio[self.rack_of[m]]
        d = self.domain_of[m]
        if d >= 0:
            worst = max(worst, out_domain * self.domain_ratio[d])
        return worst

    def divisors(self, job: Job, tasks: Sequence[tuple[int, int, int]]) -> tuple[float, float]:
        """(worker, PS) link divisors >= 1 of ``job`` at placement ``tasks`` (1, 1: no uplink binds).

        PS job: the layered model's B_w and B_ps are divided by them. All-reduce: the first
        divides the ring's inter-machine bandwidth (the second is 1).
        """
        rack, dom = self.rack_of, self.domain_of
        if job.arch == "allreduce":
            used = [m for m, w, _ in tasks if w > 0]
            racks = {rack[m] for m in used}
            if len(racks) < 2:
                return 1.0, 1.0
            worst = max(self.rack_ratio[r] for r in racks)
            domains = {dom[m] for m in used}
            if len(domains) > 1:
                worst = max([worst] + [self.domain_ratio[d] for d in domains if d >= 0])
            return max(1.0, worst), 1.0
        workers = sum(w for _, w, _ in tasks)
        ps = sum(p for _, _, p in tasks)
        if workers == 0 or ps == 0:
            return 1.0, 1.0
        dw = dp = 1.0
        for m, w, p in tasks:
            if w:
                out_r = sum(q for k, _, q in tasks if rack[k] != rack[m]) / ps
                out_d = sum(q for k, _, q in tasks if dom[k] != dom[m]) / ps
                dw = max(dw, self._ratio(m, out_r, out_d))
            if p:
                out_r = sum(v for k, v, _ in tasks if rack[k] != rack[m]) / workers
                out_d = sum(v for k, v, _ in tasks if dom[k] != dom[m]) / workers
                dp = max(dp, self._ratio(m, out_r, out_d))
        return dw, dp
