"""The body as a dependency graph: which ops a value depends on, and slicing.

A known jax divergence may explain only what its buggy op causes (harness/data/
known_divergences.toml): a wrong value explains the outputs whose dependency cone holds
that op, never the others. `cone` answers that; `slice_outputs` gives the same program
with only some outputs (dead ops dropped), so the outputs a known bug cannot touch are
checked in full on their own.

Values are numbered as in `programs.model`: arguments first, then one per body op.
"""

from __future__ import annotations

from dataclasses import replace

from programs.model import Program, is_float


def cone(p: Program, value: int) -> frozenset[int]:
    """The body ops (by index in `p.body`) that `value` depends on, itself included when
    it is an op's result; empty for an argument."""
    n_in = len(p.inputs)
    out: set[int] = set()
    todo = [value]
    while todo:
        v = todo.pop()
        i = v - n_in
        if i < 0 or i in out:
            continue
        out.add(i)
        todo.extend(p.body[i].operands)
    return frozenset(out)


def live_ops(p: Program) -> frozenset[int]:
    """The ops some output depends on (what jit keeps after dead-code elimination)."""
    live: frozenset[int] = frozenset()
    for o in p.outputs:
        live |= cone(p, o)
    return live


def slice_outputs(p: Program, keep: tuple[int, ...], also: frozenset[int] = frozenset()) -> Program:
    """`p` with only the outputs at positions `keep` (with their out_specs), the ops
    none of them depends on dropped (but the ops `also` and those they depend on), and
    values renumbered. The arguments stay (an unused argument changes no semantics, and
    in_specs still describe them). A dead op that is all that names float64 stays too: it
    is what turns jax_enable_x64 on (`Program.x64`), and without it every 64-bit type of
    the rest would change (a reduce_sum of an int32 gives int32, not int64), so a cut
    part would not check the cells it was claimed for."""
    return sliced_ops(p, keep, also)[0]


def sliced_ops(p: Program, keep: tuple[int, ...], also: frozenset[int] = frozenset()) -> tuple[Program, tuple[int, ...]]:
    """`slice_outputs(p, keep, also)` and, for each op of its body in order, that op's
    index in `p.body`."""
    q, kept = _slice_outputs(p, keep, also)
    if p.x64 and not q.x64:
        for i in range(len(p.body)):
            r, kept_i = _slice_outputs(p, keep, also | {i})
            if r.x64:
                return r, kept_i
    return q, kept


def _slice_outputs(p: Program, keep: tuple[int, ...], also: frozenset[int]) -> tuple[Program, tuple[int, ...]]:
    outputs = tuple(p.outputs[k] for k in keep)
    out_specs = tuple(p.out_specs[k] for k in keep) if len(p.out_specs) == len(p.outputs) else p.out_specs
    n_in = len(p.inputs)
    needed: set[int] = set()
    for o in (*outputs, *(n_in + i for i in also)):
        needed |= cone(p, o)
    kept = sorted(needed)
    new_index = {v: v for v in range(n_in)}
    for j, i in enumerate(kept):
        new_index[n_in + i] = n_in + j
    body = tuple(replace(p.body[i], operands=tuple(new_index[v] for v in p.body[i].operands)) for i in kept)
    # auto_axes' out_sharding has one spec per output: it keeps those of the kept outputs
    # (jax's reshard refuses a tree of out_shardings that does not match the outputs)
    wrap_specs = tuple(p.wrap_specs[k] for k in keep) if p.wrap == "auto_axes" and len(p.wrap_specs) == len(p.outputs) else p.wrap_specs
    return replace(p, body=body, outputs=tuple(new_index[o] for o in outputs), out_specs=out_specs, wrap_specs=wrap_specs), tuple(kept)


def drop_unused_inputs(p: Program) -> Program:
    """`p` without the arguments no op and no output uses (with their in_specs, and their
    in_sharding under `explicit_axes`), values renumbered; at least one argument stays,
    and a float one where `p` has one (the grad modes run only a program with a float
    argument, whose derivative they take).
    For a valid program only: an invalid one's defect may be an unused argument's spec.
    Eager shard_map moves every argument to its in_spec's layout with a compile of its
    own (jax 0.10.2 `_unmatch_spec`), as
    costly as an op, and an unused argument checks no cell."""
    n_in = len(p.inputs)
    used = {v for op in p.body for v in op.operands if v < n_in} | {o for o in p.outputs if o < n_in}
    kept = [i for i in range(n_in) if i in used]
    floats = [i for i, x in enumerate(p.inputs) if is_float(x.dtype)]
    if floats and not any(i in floats for i in kept):
        kept = sorted({*kept, floats[0]})  # (the grad modes differentiate by the float arguments: one stays)
    kept = kept or [0]
    if len(kept) == n_in or n_in == 0:
        return p
    new_index = {v: j for j, v in enumerate(kept)}
    shift = n_in - len(kept)
    for i in range(len(p.body)):
        new_index[n_in + i] = n_in + i - shift
    body = tuple(replace(op, operands=tuple(new_index[v] for v in op.operands)) for op in p.body)
    wrap_specs = tuple(p.wrap_specs[i] for i in kept) if p.wrap == "explicit_axes" and len(p.wrap_specs) == n_in else p.wrap_specs
    q = replace(p, inputs=tuple(p.inputs[i] for i in kept), in_specs=tuple(p.in_specs[i] for i in kept), body=body,
                outputs=tuple(new_index[o] for o in p.outputs), wrap_specs=wrap_specs)
    # (an unused float64 argument is what turns jax_enable_x64 on: the program keeps it)
    return q if q.x64 == p.x64 else p


def lean_part(p: Program, keep: tuple[int, ...] | None, failing_op: int | None, valid: bool = False) -> Program:
    """The program a costly mode (eager) runs for the cells it was claimed for
    (harness/campaign/cells.py `CellLedger.claim`): `p` cut to the outputs `keep` (all:
    None), without its dead ops. Eager shard_map dispatches every op of the body, live or
    not, one compile each, so a dead op costs it as much as a live one and checks no
    cell (a cell counts only for a live op). An invalid program keeps the op its error
    is predicted at (`failing_op`, the first op the oracle could not type) and what that
    op needs: the ops before it raise nothing, so the error is the same. A program the
    caller knows is `valid` (the oracle predicts no error) also drops its unused
    arguments (`drop_unused_inputs`)."""
    keep = tuple(range(len(p.outputs))) if keep is None else keep
    also = frozenset() if failing_op is None else frozenset({failing_op})
    q = slice_outputs(p, keep, also)
    return drop_unused_inputs(q) if valid else q
