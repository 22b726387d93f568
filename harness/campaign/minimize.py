"""Minimization: shrink a failing program while it keeps the same divergence signature.

Greedy passes over the program itself, repeated until none makes progress: drop
outputs, drop ops (rewiring their users to an operand), drop unused arguments, remove
mesh axes, shrink argument shapes, simplify specs and values. Every candidate runs
through real jax (in a crash-safe worker, so a crash signature can be minimized too)
and is kept only if the same signature appears again; invalid candidates simply fail to
reproduce. The result is what a JAX developer reads, so smaller always wins.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

from harness.judge.check import evaluate, localise_values, probe_mode
from harness.report.reproducer import divergence_mode, reproducer
from programs.errors import NoReproducer
from programs.model import Input, Mesh, Op, Program, Spec

Check = Callable[[Program], set[str]]  # program -> the divergence signatures it shows


def size(p: Program) -> tuple[int, int, int, int, int]:
    """What 'smaller' means, most important first."""
    elems = sum(max(1, int(_prod(x.shape))) for x in p.inputs)
    spec_axes = sum(len(s.axes()) for s in p.in_specs + p.out_specs)
    return (len(p.body), len(p.outputs) + len(p.inputs), p.mesh.size + len(p.mesh.names), elems, spec_axes)


def _prod(xs: tuple[int, ...]) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


def _renumber(p: Program, drop_value: int, replacement: int | None) -> Program | None:
    """Remove value `drop_value` (an argument or an op's result); its uses become
    `replacement` (or the candidate is impossible when there is none and it is used)."""
    n_in = len(p.inputs)

    def new_index(v: int) -> int | None:
        if v == drop_value:
            if replacement is None:
                return None
            v = replacement
        return v - 1 if v > drop_value else v

    body: list[Op] = []
    for i, op in enumerate(p.body):
        if n_in + i == drop_value:
            continue
        ops = tuple(new_index(v) for v in op.operands)
        if any(v is None for v in ops):
            return None
        body.append(replace(op, operands=ops))  # type: ignore[arg-type]
    outs = tuple(new_index(v) for v in p.outputs)
    if any(v is None for v in outs):
        return None
    if drop_value < n_in:
        return replace(
            p,
            inputs=p.inputs[:drop_value] + p.inputs[drop_value + 1 :],
            in_specs=p.in_specs[:drop_value] + p.in_specs[drop_value + 1 :] if len(p.in_specs) == n_in else p.in_specs,
            body=tuple(body),
            outputs=outs,  # type: ignore[arg-type]
        )
    return replace(p, body=tuple(body), outputs=outs)  # type: ignore[arg-type]


def _drop_outputs(p: Program) -> Iterator[Program]:
    if len(p.outputs) > 1:
        for k in range(len(p.outputs)):
            specs = p.out_specs[:k] + p.out_specs[k + 1 :] if len(p.out_specs) == len(p.outputs) else p.out_specs
            yield replace(p, outputs=p.outputs[:k] + p.outputs[k + 1 :], out_specs=specs)


def _drop_ops(p: Program) -> Iterator[Program]:
    n_in = len(p.inputs)
    for i in reversed(range(len(p.body))):
        op = p.body[i]
        v = n_in + i
        for r in [None, *op.operands]:
            q = _renumber(p, v, r)
            if q is not None:
                yield q


def _drop_inputs(p: Program) -> Iterator[Program]:
    if len(p.inputs) <= 1:
        return
    for i in reversed(range(len(p.inputs))):
        q = _renumber(p, i, None)
        if q is not None:
            yield q


def _without_axis(p: Program, a: str) -> Program | None:
    i = p.mesh.names.index(a)
    mesh = Mesh(p.mesh.names[:i] + p.mesh.names[i + 1 :], p.mesh.sizes[:i] + p.mesh.sizes[i + 1 :], p.mesh.axis_types[:i] + p.mesh.axis_types[i + 1 :])
    if not mesh.names:
        return None

    def spec(s: Spec) -> Spec:
        return Spec(tuple(None if e is None else (tuple(x for x in e if x != a) or None) for e in s.entries), s.kind)

    inputs = []
    for x, s in zip(p.inputs, p.in_specs):
        shape = tuple(n // p.mesh.axis_size(a) if d < len(s.entries) and s.entries[d] and a in s.entries[d] else n for d, n in enumerate(x.shape))  # type: ignore[operator]
        inputs.append(replace(x, shape=shape))
    inputs += list(p.inputs[len(inputs) :])
    body = []
    for op in p.body:
        if op.kind == "shard_map" and a in (op.p("inner_axes") or ()):  # type: ignore[operator]
            return None
        axes = op.p("axes")
        if axes is not None and a in axes:  # type: ignore[operator]
            rest = tuple(x for x in axes if x != a)  # type: ignore[union-attr]
            if not rest:
                return None
            params = tuple((k, rest if k == "axes" else v) for k, v in op.params if k not in ("perm", "groups"))
            if any(k in ("perm", "groups") for k, _ in op.params):
                return None
            op = replace(op, params=params)
        body.append(op)
    axis_names = None if p.axis_names is None else tuple(x for x in p.axis_names if x != a)
    if axis_names == ():
        return None  # (jax reads an empty axis_names as all of them: another program)
    if axis_names is not None and set(axis_names) == set(mesh.names):
        axis_names = None
    return replace(
        p,
        mesh=mesh,
        inputs=tuple(inputs),
        in_specs=tuple(spec(s) for s in p.in_specs),
        out_specs=tuple(spec(s) for s in p.out_specs),
        body=tuple(body),
        axis_names=axis_names,
    )


def _mesh_passes(p: Program) -> Iterator[Program]:
    for a in p.mesh.names:
        q = _without_axis(p, a)
        if q is not None:
            yield q


def _shrink_shapes(p: Program) -> Iterator[Program]:
    for i, (x, s) in enumerate(zip(p.inputs, p.in_specs)):
        for d, n in enumerate(x.shape):
            e = s.entries[d] if d < len(s.entries) else None
            g = p.mesh.group_size(e) if e else 1
            local = n // g if g else n
            for new_local in sorted({1, local // 2}):
                if 0 < new_local < local:
                    shape = x.shape[:d] + (new_local * g,) + x.shape[d + 1 :]
                    yield replace(p, inputs=p.inputs[:i] + (replace(x, shape=shape),) + p.inputs[i + 1 :])


def _simplify_specs(p: Program) -> Iterator[Program]:
    for which in ("in_specs", "out_specs"):
        specs: tuple[Spec, ...] = getattr(p, which)
        for i, s in enumerate(specs):
            while s.entries and s.entries[-1] is None:
                s = Spec(s.entries[:-1], s.kind)
                yield replace(p, **{which: specs[:i] + (s,) + specs[i + 1 :]})
            for d, e in enumerate(s.entries):
                if e:
                    new = Spec(s.entries[:d] + (e[:-1] or None,) + s.entries[d + 1 :], s.kind)
                    q = replace(p, **{which: specs[:i] + (new,) + specs[i + 1 :]})
                    if which == "in_specs" and i < len(p.inputs):
                        x = p.inputs[i]
                        shape = x.shape[:d] + (x.shape[d] // p.mesh.axis_size(e[-1]),) + x.shape[d + 1 :]
                        q = replace(q, inputs=q.inputs[:i] + (replace(x, shape=shape),) + q.inputs[i + 1 :])
                    yield q


def _simplify_values(p: Program) -> Iterator[Program]:
    for i, x in enumerate(p.inputs):
        if x.fill != "iota" or x.offset:
            yield replace(p, inputs=p.inputs[:i] + (Input(x.shape, x.dtype, "iota", 0),) + p.inputs[i + 1 :])


PASSES = (_drop_outputs, _drop_ops, _drop_inputs, _mesh_passes, _shrink_shapes, _simplify_specs, _simplify_values)


def minimize(
    p: Program,
    signature: str,
    check: Check,
    budget_s: float = 120.0,
    max_checks: int = 300,
    log: Callable[[str], None] | None = None,
) -> tuple[Program, int]:
    """The smallest program found that still shows `signature`, and the checks spent."""
    t0 = time.monotonic()
    checks = 0
    best = p
    progress = True
    while progress:
        progress = False
        for make in PASSES:
            for cand in make(best):
                if time.monotonic() - t0 > budget_s or checks >= max_checks:
                    return best, checks
                if size(cand) >= size(best):
                    continue
                checks += 1
                if signature in check(cand):
                    best = cand
                    progress = True
                    if log:
                        log(f"  {make.__name__.strip('_')}: now {len(best.body)} ops, mesh {best.mesh.sizes}, "
                            f"{len(best.inputs)} args {[x.shape for x in best.inputs]}")
                    break  # restart this pass on the smaller program
    return best, checks


def modes_for(signature: str, all_modes: tuple[str, ...]) -> tuple[str, ...]:
    """The modes a signature needs to reappear: its own, or all of them for a mode
    disagreement (which is about the modes that do NOT raise as much as those that do)."""
    kind, mode, _ = signature.split("|", 2)
    if kind == "mode_disagreement":
        return all_modes
    return tuple(m for m in mode.split(",") if m in all_modes) or all_modes


def pool_check(pool, modes: tuple[str, ...]) -> Check:  # type: ignore[no-untyped-def]
    """A Check that runs candidates in a worker pool (crash-safe) and compares them with
    the oracle. A candidate the oracle cannot even interpret shows no signature."""
    def check(q: Program) -> set[str]:
        pool.submit(q, modes)
        done = pool.drain()
        try:
            res = evaluate(done[0].program, done[0].observations)
            while (probe := probe_mode(res)) is not None:
                pool.submit(probe.program, (probe.mode,))
                res = localise_values(res, pool.drain()[0].observations[0])
        except Exception:  # noqa: BLE001 - a malformed candidate just does not reproduce
            return set()
        return {d.signature for d in res.divergences}

    return check


def minimize_case(pool, p: Program, signature: str, all_modes: tuple[str, ...], budget_s: float, log=None):  # type: ignore[no-untyped-def]
    return minimize(p, signature, pool_check(pool, modes_for(signature, all_modes)), budget_s=budget_s, log=log)


def minimized_reproducer(p: Program, signature: str, title: str) -> str:
    """The text of the `.min.py` written beside a minimized case: the asserting
    reproducer (harness/report/reproducer.py) in the mode of `signature` (KIND|MODE|WHERE;
    for a mode disagreement, a mode on its wrong side), which exits 1 with `BUG:` while jax
    still shows the divergence. Where that mode does not apply to the program (the
    harness reports it unsupported), the jit one."""
    mode = divergence_mode(p, *signature.split("|")[:2]) if signature.count("|") == 2 else "jit"
    try:
        return reproducer(p, mode=mode, title=title)
    except NoReproducer:
        return reproducer(p, mode="jit", title=title)


def write_minimized_reproducer(path: Path, p: Program, signature: str, title: str) -> None:
    """Write `minimized_reproducer(...)` to `path` (CASE.min.py) atomically."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(minimized_reproducer(p, signature, title))
    os.replace(tmp, path)
