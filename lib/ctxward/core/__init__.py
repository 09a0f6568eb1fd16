"""The base floor: standard library only, no feature and no host knowledge."""
