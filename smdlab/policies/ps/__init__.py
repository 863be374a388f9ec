"""Parameter-server family: FIFO, SJF/SRTF, DRF, Tetris, Optimus, Tiresias, SMD and MILP
(docs/baselines.md, docs/solver.md). ``_convergence`` is Optimus's loss-curve estimator."""
