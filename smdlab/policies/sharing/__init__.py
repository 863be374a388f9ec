"""GPU-sharing family: Gandiva, Horus, SJF-BSBF and SJF-FFS (docs/simulator.md, "GPU sharing").
``_groups`` holds their shared idioms (sharing groups, requests, fits)."""
