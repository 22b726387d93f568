"""Per-device values, vectorised over the mesh.

The oracle holds each body value as ONE NumPy array of shape `mesh.sizes + local_shape`:
the block device `c` (a mesh coordinate) holds is `data[c]`. Local ops broadcast over the
leading mesh dimensions; a collective over axes `A` regroups the array so that the
devices of one group lie along dimension 0 (`to_groups`), works along it, and puts the
mesh back (`from_groups`). This is the lockstep interpreter: every device runs every op
at once, and no Python loop runs over devices.

Integers and bools are held in their own dtype (wrapping like XLA); floats as float64,
with a per-element error bound beside them (oracles/rounding.py).
"""

from __future__ import annotations

import math

import numpy as np

from programs.model import Mesh, is_float, storage


def np_dtype(dtype: str) -> type[np.generic]:
    """The NumPy dtype the oracle computes in for a program dtype: float64 for every
    float (oracles/rounding.py bounds the difference), the dtype itself for integers and
    bool (NumPy wraps integer arithmetic as XLA does)."""
    return np.float64 if is_float(dtype) else storage(dtype)


def group_index(mesh: Mesh, axes: tuple[str, ...]) -> np.ndarray:
    """Each device's index within its group along `axes` (major first), shape mesh.sizes."""
    idx = np.zeros(mesh.sizes, dtype=np.int64)
    for a in axes:
        d = mesh.names.index(a)
        shape = [1] * len(mesh.sizes)
        shape[d] = mesh.sizes[d]
        idx = idx * mesh.sizes[d] + np.arange(mesh.sizes[d]).reshape(shape)
    return idx


def to_groups(data: np.ndarray, mesh: Mesh, axes: tuple[str, ...]) -> np.ndarray:
    """Move the mesh dims of `axes` to the front, merged into one group dim (major first).

    Result shape: (n, *other mesh dims, *local shape), with n the product of the sizes.
    """
    m = len(mesh.sizes)
    idx = [mesh.names.index(a) for a in axes]
    rest = [i for i in range(m) if i not in idx]
    t = data.transpose(idx + rest + list(range(m, data.ndim)))
    n = math.prod(mesh.sizes[i] for i in idx)
    return t.reshape((n,) + t.shape[len(idx) :])


def from_groups(t: np.ndarray, mesh: Mesh, axes: tuple[str, ...]) -> np.ndarray:
    """Inverse of `to_groups` (the local shape may have changed)."""
    m = len(mesh.sizes)
    idx = [mesh.names.index(a) for a in axes]
    rest = [i for i in range(m) if i not in idx]
    t = t.reshape(tuple(mesh.sizes[i] for i in idx) + t.shape[1:])
    order = idx + rest
    inverse = [order.index(i) for i in range(m)]
    return t.transpose(inverse + list(range(m, t.ndim)))


def local_offset(mesh: Mesh, axes: tuple[str, ...]) -> int:
    """Index of the first local dim in the grouped layout of `to_groups`."""
    return len(mesh.sizes) - len(axes) + 1


def _block_slices(
    c: tuple[int, ...], mesh: Mesh, entries: tuple[tuple[str, ...] | None, ...], shape: tuple[int, ...], local: bool
) -> tuple[slice, ...]:
    """Where device `c`'s block sits in a global array of `shape` (or of local `shape`)."""
    out = []
    for d, n_d in enumerate(shape):
        e = entries[d] if d < len(entries) else None
        if not e:
            out.append(slice(None))
            continue
        k = 0
        for a in e:
            i = mesh.names.index(a)
            k = k * mesh.sizes[i] + c[i]
        blk = n_d if local else n_d // mesh.group_size(e)
        out.append(slice(k * blk, (k + 1) * blk))
    return tuple(out)


def split_global(x: np.ndarray, mesh: Mesh, entries: tuple[tuple[str, ...] | None, ...]) -> np.ndarray:
    """Shard a global array by a spec: returns shape mesh.sizes + local shape.

    Dimension `d` with spec entry `(a, b)` is cut into size(a)*size(b) blocks; the device at
    coordinate c gets block `c[a] * size(b) + c[b]` (the first axis named is major).
    Devices along axes the spec does not name get the same block (replication).
    """
    local = tuple(
        n // mesh.group_size(entries[d]) if d < len(entries) and entries[d] else n
        for d, n in enumerate(x.shape)
    )
    out = np.empty(tuple(mesh.sizes) + local, dtype=x.dtype)
    for c in mesh.coords():
        out[c] = x[_block_slices(c, mesh, entries, x.shape, local=False)]
    return out


def global_shape(
    local: tuple[int, ...], mesh: Mesh, entries: tuple[tuple[str, ...] | None, ...]
) -> tuple[int, ...]:
    return tuple(
        n * mesh.group_size(entries[d]) if d < len(entries) and entries[d] else n
        for d, n in enumerate(local)
    )


def assemble_global(
    data: np.ndarray, mesh: Mesh, entries: tuple[tuple[str, ...] | None, ...]
) -> np.ndarray:
    """Concatenate device blocks back into a global array by an out_spec.

    Along mesh axes the spec does not name, the last device's block wins (callers check
    replication separately, and only use the result when the blocks agree).
    """
    m = len(mesh.sizes)
    local = data.shape[m:]
    out = np.empty(global_shape(local, mesh, entries), dtype=data.dtype)
    for c in mesh.coords():
        blk = _block_slices(c, mesh, entries, local, local=True)
        out[blk] = data[c]
    return out


def split_local(x: np.ndarray, mesh: Mesh, entries: tuple[tuple[str, ...] | None, ...]) -> np.ndarray:
    """Shard each device's own block again by a spec (a nested shard_map's in_spec):
    mesh.sizes + B -> mesh.sizes + b, device c keeping its part of its own block."""
    m = len(mesh.sizes)
    big = x.shape[m:]
    local = tuple(n // mesh.group_size(entries[d]) if d < len(entries) and entries[d] else n for d, n in enumerate(big))
    out = np.empty(tuple(mesh.sizes) + local, dtype=x.dtype)
    for c in mesh.coords():
        at: tuple[int | slice, ...] = (*c, *_block_slices(c, mesh, entries, big, local=False))
        out[c] = x[at]
    return out


def assemble_local(y: np.ndarray, mesh: Mesh, entries: tuple[tuple[str, ...] | None, ...]) -> np.ndarray:
    """Inverse of `split_local` (a nested shard_map's out_spec): device c's new block is
    the concatenation of the blocks of the devices that differ from c only along the
    axes the spec names (along the others, c's own block is taken)."""
    m = len(mesh.sizes)
    small = y.shape[m:]
    named = {mesh.names.index(a) for e in entries if e for a in e}
    out = np.empty(tuple(mesh.sizes) + global_shape(small, mesh, entries), dtype=y.dtype)
    for c in mesh.coords():
        for c2 in mesh.coords():
            if all(c2[i] == c[i] for i in range(m) if i not in named):
                # (one index, so a rank-0 block is written in place: out[c] of one is a copy)
                at: tuple[int | slice, ...] = (*c, *_block_slices(c2, mesh, entries, small, local=True))
                out[at] = y[c2]
    return out
