"""One HiGHS solve of a model given as arrays, in this process or in a child process it can stop.

Why a child process: HiGHS' MIP setup checks no time limit. Its clique partition of the
objective's binaries (``HighsObjectiveFunction::setupCliquePartition``, called from
``HighsMipSolverData::runSetup`` before the first ``checkLimits``; HiGHS 1.16 source,
https://github.com/ERGO-Code/HiGHS, MIT licence) grows about quadratically with the columns: on a
175,077-column allocation MILP (10,000 jobs) it ran over 500 s under ``time_limit=30`` (seen with
gdb). Only stopping the process bounds that. The limit that HiGHS does not check is a known
HiGHS limitation (https://github.com/ERGO-Code/HiGHS/issues/885, open).

Run as a script (``python highs_worker.py``), this file reads a pickled request on stdin and writes
the pickled answer to stdout; it imports only numpy and highspy,
so the child starts in well under a second.
"""

from __future__ import annotations

import os
import pickle
import sys
import time
from typing import Any

import numpy as np

# Answer statuses: optimal, time_limit (stopped with an incumbent), infeasible, error (no usable solution).


def run_highs(h: Any, req: dict[str, Any]) -> dict[str, Any]:
    """Solve ``req`` (CSC matrix, costs, row bounds, integrality, options) on the Highs object ``h``.

    The time limit is ``req["deadline"]`` (``time.time()`` seconds) less now, when given.
    """
    import highspy

    inf = highspy.kHighsInf
    m = len(req["cost"])
    lo, hi = req["row_lo"], req["row_hi"]
    h.passModel(
        m, len(lo), len(req["data"]), 1, 1, 0.0,
        req["cost"], req["col_lo"], req["col_hi"],
        np.where(np.isinf(lo), -inf, lo), np.where(np.isinf(hi), inf, hi),
        req["indptr"], req["indices"], req["data"],
        np.full(m, 1 if req["integral"] else 0, dtype=np.int32),
    )  # fmt: skip
    if req.get("deadline") is not None:
        h.setOptionValue("time_limit", max(1e-3, float(req["deadline"] - time.time())))
    if req["integral"]:
        if req.get("mip_gap") is not None:
            h.setOptionValue("mip_rel_gap", float(req["mip_gap"]))
        if req.get("start") is not None:
            # the whole vector: a partial one makes HiGHS complete it by a sub-MIP first, which
            # can use up a short limit and lose the start
            sol = highspy.HighsSolution()
            sol.col_value = np.asarray(req["start"], dtype=float).tolist()
            sol.value_valid = True
            h.setSolution(sol)
    elif req.get("lp_solver"):
        h.setOptionValue("solver", req["lp_solver"])
    h.run()
    status = h.getModelStatus()
    S = highspy.HighsModelStatus
    info = h.getInfo()
    if status == S.kInfeasible:
        return {"status": "infeasible"}
    has_sol = info.primal_solution_status == 2  # kSolutionStatusFeasible
    if status == S.kOptimal:
        tag = "optimal"
    elif status in (S.kTimeLimit, S.kIterationLimit, S.kSolutionLimit, S.kInterrupt) and has_sol:
        tag = "time_limit"
    else:
        return {"status": "error", "message": h.modelStatusToString(status)}
    obj = float(info.objective_function_value)
    bound = float(info.mip_dual_bound) if req["integral"] else obj
    return {
        "status": tag,
        "x": np.asarray(h.getSolution().col_value, dtype=float),
        "objective": obj,
        "bound": bound if np.isfinite(bound) else -np.inf,
    }


def _main() -> None:
    # the answer goes to the original stdout; HiGHS may print (its banner) on fd 1, so fd 1
    # becomes /dev/null and nothing it prints can reach the answer
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    req = pickle.load(sys.stdin.buffer)
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    try:
        answer = run_highs(h, req)
    except Exception as exc:  # anything HiGHS raises goes back to the caller as one message
        answer = {"status": "error", "message": f"{type(exc).__name__}: {exc}"}
    pickle.dump(answer, out, protocol=pickle.HIGHEST_PROTOCOL)
    out.close()


if __name__ == "__main__":
    _main()
