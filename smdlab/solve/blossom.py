"""Maximum-weight matching of a general graph: the O(n^3) weighted blossom algorithm.

Source of the algorithm: J. Edmonds, "Maximum matching and a polyhedron with 0,1-vertices" (1965)
and H. N. Gabow's O(n^3) implementation of the weighted case (1974), in the widespread
primal-dual form with an n x n table of best edges between (nested) blossoms. Muri's simulator
(Rivendile/Muri, Apache-2.0, ``simulator/matching.py``, ``_Blossom_Same``) matches its packings
with that form; this module restates it (read, not copied) so that the matching it returns is
the one Muri's simulator returns.

Why not ``networkx.max_weight_matching``: both reach the maximum total weight, but when several
matchings share that weight (jobs of one profile give equal weights) they return different ones.
Which one this module returns is fixed by the rules below, all of Muri's simulator:

- Vertices are scanned in index order; the search queue is first in, first out; a blossom's
  vertices join the queue breadth-first over its nested blossoms.
- The dual of every vertex starts at the largest weight; an edge is tight when its slack
  ``y_u + y_v - 2 w`` is at most 0 (exact comparison); the search ends when a free vertex's dual
  is at most the step ``d`` or within a relative 1e-5 of it.
- The weight table is directed: ``w[u][v]`` is read when the search scans from ``u``, so a table
  whose two halves differ by rounding gives the matching Muri's simulator gives.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence

from smdlab.errors import InvalidInput

__all__ = ["REL_TOL", "max_weight_matching"]

REL_TOL = 1e-5  # Muri's simulator: a dual within this relative distance of the step ends the search

_Edge = tuple[int, int, float]  # (u, v, w) between real vertices u and v (1-based)


def max_weight_matching(weights: Sequence[Sequence[float]]) -> list[int]:
    """Mate of every vertex (-1: unmatched) in a maximum-weight matching of ``weights`` (n x n).

    ``weights[u][v] > 0`` is an edge (the diagonal is ignored); the matching need not have the
    most pairs. Among matchings of equal weight, the one of the module docstring's rules.
    """
    n = len(weights)
    if any(len(row) != n for row in weights):
        raise InvalidInput(
            f"weights must be a square table, got {n} rows of lengths "
            f"{sorted({len(r) for r in weights})}"
        )
    m = _Matcher(weights)
    if m.has_edge:
        while m.augment_once():
            pass
    mate = [-1] * n
    for u in range(1, n + 1):
        v = m.match[u]
        if v > 0 and m.match[v] == u:
            mate[u - 1] = v - 1
    return mate


class _Matcher:
    """State of one run. Indices 1..n are vertices, n+1.. blossoms, 0 means none."""

    def __init__(self, weights: Sequence[Sequence[float]]) -> None:
        n = self.n = len(weights)
        self.nx = n  # highest index in use (vertices and blossoms)
        edge: list[list[_Edge]] = [[(u, v, 0.0) for v in range(n + 1)] for u in range(n + 1)]
        top = 0.0
        self.has_edge = False
        for u in range(1, n + 1):
            row = weights[u - 1]
            for v in range(1, n + 1):
                w = float(row[v - 1])
                if u != v and w > 0:
                    edge[u][v] = (u, v, w)
                    self.has_edge = True
                    top = max(top, w)
        self.edge = edge
        self.lab = [top] * (n + 1)  # duals; index 0 keeps the start value
        self.match = [0] * (n + 1)
        self.pa = [0] * (n + 1)
        self.st = list(range(n + 1))  # outermost blossom holding each index
        self.flower: list[list[int]] = [[] for _ in range(n + 1)]
        # flower_from[b][x]: the child of blossom b that holds vertex x
        self.flower_from = [[u if u == v else 0 for v in range(n + 1)] for u in range(n + 1)]
        self.vis = [0] * (n + 1)
        self.stamp = 0
        self.S: list[int] = []  # -1 unlabelled, 0 outer (even), 1 inner (odd)
        self.slack: list[int] = []  # per blossom: the vertex of least slack towards it
        self.q: deque[int] = deque()

    def _dist(self, e: _Edge) -> float:
        return self.lab[e[0]] + self.lab[e[1]] - e[2] * 2.0

    def _update_slack(self, u: int, x: int) -> None:
        s = self.slack[x]
        if s == 0 or self._dist(self.edge[u][x]) < self._dist(self.edge[s][x]):
            self.slack[x] = u

    def _set_slack(self, x: int) -> None:
        self.slack[x] = 0
        st, S, edge = self.st, self.S, self.edge
        for u in range(1, self.n + 1):
            if edge[u][x][2] > 0 and st[u] != x and S[st[u]] == 0:
                self._update_slack(u, x)

    def _q_push(self, x: int) -> None:
        """Queue the vertices of ``x``, breadth-first over nested blossoms."""
        todo = deque([x])
        while todo:
            y = todo.popleft()
            if y <= self.n:
                self.q.append(y)
            else:
                todo.extend(self.flower[y])

    def _set_st(self, x: int, b: int) -> None:
        todo = [x]
        while todo:
            y = todo.pop()
            self.st[y] = b
            if y > self.n:
                todo.extend(self.flower[y])

    def _get_pr(self, b: int, xr: int) -> int:
        """Position of child ``xr`` in blossom ``b``, reversing the cycle's direction if odd."""
        fl = self.flower[b]
        pr = fl.index(xr)
        if pr % 2 == 1:
            self.flower[b] = [fl[0], *fl[:0:-1]]
            return len(fl) - pr
        return pr

    def _set_match(self, u: int, v: int) -> None:
        todo = deque([(u, v)])
        while todo:
            u, v = todo.popleft()
            e = self.edge[u][v]
            self.match[u] = e[1]
            if u <= self.n:
                continue
            xr = self.flower_from[u][e[0]]
            pr = self._get_pr(u, xr)
            fl = self.flower[u]
            todo.extend((fl[i], fl[i ^ 1]) for i in range(pr))
            todo.append((xr, v))
            self.flower[u] = fl[pr:] + fl[:pr]

    def _augment(self, u: int, v: int) -> None:
        st, pa = self.st, self.pa
        while True:
            xnv = st[self.match[u]]
            self._set_match(u, v)
            if xnv == 0:
                return
            self._set_match(xnv, st[pa[xnv]])
            u, v = st[pa[xnv]], xnv

    def _lca(self, u: int, v: int) -> int:
        self.stamp += 1
        st, vis = self.st, self.vis
        while u != 0 or v != 0:
            if u != 0:
                if vis[u] == self.stamp:
                    return u
                vis[u] = self.stamp
                u = st[self.match[u]]
                if u != 0:
                    u = st[self.pa[u]]
            u, v = v, u
        return 0

    def _new_blossom_index(self, lca: int) -> int:
        st = self.st
        b = self.n + 1
        while b <= self.nx and st[b] != 0:
            b += 1
        if b <= self.nx:  # reuse an expanded blossom's index
            self.lab[b], self.S[b] = 0.0, 0
            self.match[b] = self.match[lca]
            self.flower[b] = [lca]
            return b
        self.nx = b
        self.flower.append([lca])
        self.match.append(self.match[lca])
        for erow in self.edge:
            erow.append((0, 0, 0.0))
        self.edge.append([(0, 0, 0.0)] * (b + 1))
        st.append(b)
        for frow in self.flower_from:
            frow.append(0)
        self.flower_from.append([0] * (b + 1))
        for arr in (self.S, self.slack, self.pa, self.vis):
            arr.append(0)
        self.lab.append(0.0)
        return b

    def _add_blossom(self, u: int, lca: int, v: int) -> None:
        b = self._new_blossom_index(lca)
        st, edge = self.st, self.edge
        fl = self.flower[b]
        for start in (u, v):
            x = start
            while x != lca:
                y = st[self.match[x]]
                fl += (x, y)
                self._q_push(y)
                x = st[self.pa[y]]
            if start == u:  # the first path is walked from u towards the base: reverse it
                fl[1:] = fl[:0:-1]
        self._set_st(b, b)
        for x in range(1, self.nx + 1):
            e, f = edge[b][x], edge[x][b]
            edge[b][x] = (e[0], e[1], 0.0)
            edge[x][b] = (f[0], f[1], 0.0)
        fb = self.flower_from[b]
        for x in range(1, self.n + 1):
            fb[x] = 0
        for xs in fl:
            for x in range(1, self.nx + 1):
                if edge[b][x][2] <= 0 or self._dist(edge[xs][x]) < self._dist(edge[b][x]):
                    edge[b][x] = edge[xs][x]
                    edge[x][b] = edge[x][xs]
            fxs = self.flower_from[xs]
            for x in range(1, self.n + 1):
                if fxs[x] != 0:
                    fb[x] = xs
        self._set_slack(b)

    def _expand_blossom(self, b: int) -> None:
        for i in self.flower[b]:
            self._set_st(i, i)
        xr = self.flower_from[b][self.edge[b][self.pa[b]][0]]
        pr = self._get_pr(b, xr)
        fl = self.flower[b]
        S = self.S
        for i in range(0, pr, 2):
            xs, xns = fl[i], fl[i + 1]
            self.pa[xs] = self.edge[xns][xs][0]
            S[xs], S[xns] = 1, 0
            self.slack[xs] = 0
            self._set_slack(xns)
            self._q_push(xns)
        S[xr], self.pa[xr] = 1, self.pa[b]
        for i in range(pr + 1, len(fl)):
            S[fl[i]] = -1
            self._set_slack(fl[i])
        self.st[b] = 0

    def _on_tight(self, e: _Edge) -> bool:
        """Grow the forest along tight edge ``e``; True when it completed an augmentation."""
        st, S = self.st, self.S
        u, v = st[e[0]], st[e[1]]
        if S[v] == -1:
            self.pa[v] = e[0]
            S[v] = 1
            nu = st[self.match[v]]
            self.slack[v] = self.slack[nu] = 0
            S[nu] = 0
            self._q_push(nu)
        elif S[v] == 0:
            lca = self._lca(u, v)
            if lca == 0:
                self._augment(u, v)
                self._augment(v, u)
                return True
            self._add_blossom(u, lca, v)
        return False

    def augment_once(self) -> bool:
        """One search from every free vertex: True if it augmented the matching."""
        n, st, lab, edge = self.n, self.st, self.lab, self.edge
        self.S = S = [-1] * (self.nx + 1)
        self.slack = slack = [0] * (self.nx + 1)
        self.q = q = deque[int]()
        for x in range(1, self.nx + 1):
            if st[x] == x and self.match[x] <= 0:
                self.pa[x] = 0
                S[x] = 0
                self._q_push(x)
        if not q:
            return False
        while True:
            while q:
                u = q.popleft()
                if S[st[u]] == 1:
                    continue
                row = edge[u]
                for v in range(1, n + 1):
                    e = row[v]  # between vertices: (u, v, w), never rewritten
                    w = e[2]
                    if w <= 0:
                        continue
                    x = st[v]
                    if st[u] == x:
                        continue
                    if lab[u] + lab[v] - w * 2.0 <= 0:
                        if self._on_tight(e):
                            return True
                        continue
                    s = slack[x]  # _update_slack(u, x), inlined: the hottest loop
                    if s == 0:
                        slack[x] = u
                    else:
                        ea, eb = edge[u][x], edge[s][x]
                        if (
                            lab[ea[0]] + lab[ea[1]] - ea[2] * 2.0
                            < lab[eb[0]] + lab[eb[1]] - eb[2] * 2.0
                        ):
                            slack[x] = u
            d = math.inf
            for b in range(n + 1, self.nx + 1):
                if st[b] == b and S[b] == 1:
                    d = min(d, lab[b] / 2.0)
            for x in range(1, self.nx + 1):
                if st[x] == x and slack[x] != 0:
                    if S[x] == -1:
                        d = min(d, self._dist(edge[slack[x]][x]))
                    elif S[x] == 0:
                        d = min(d, self._dist(edge[slack[x]][x]) / 2.0)
            for u in range(1, n + 1):
                side = S[st[u]]
                if side == 0:
                    if lab[u] <= d or math.isclose(lab[u], d, rel_tol=REL_TOL):
                        return False
                    lab[u] -= d
                elif side == 1:
                    lab[u] += d
            for b in range(n + 1, self.nx + 1):
                if st[b] == b:
                    if S[b] == 0:
                        lab[b] += d * 2
                    elif S[b] == 1:
                        lab[b] -= d * 2
            q.clear()
            for x in range(1, self.nx + 1):
                s = slack[x]
                tight = st[x] == x and s != 0 and st[s] != x and self._dist(edge[s][x]) <= 0
                if tight and self._on_tight(edge[s][x]):
                    return True
            for b in range(n + 1, self.nx + 1):
                if st[b] == b and S[b] == 1 and lab[b] <= 0:
                    self._expand_blossom(b)
