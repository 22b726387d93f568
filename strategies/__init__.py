"""Hypothesis strategies that draw whole shard_map programs (no jax)."""

from strategies.programs import ALL_KINDS, meshes, programs

__all__ = ["ALL_KINDS", "meshes", "programs"]
