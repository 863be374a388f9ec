"""Storage-aware policies: CBA, AutoCBA and SiloD (docs/storage.md), and the cache rules."""
