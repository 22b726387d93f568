"""The modes that run the shard_map under a jax transformation: `vmap` (a batch of 2),
`vmap_spmd` (vmap with spmd_axis_name, the batch split over a free manual axis), `grad`
and `grad_remat` (<u, J v> by jvp and by vjp, the second with the body under
jax.checkpoint, with the program's named policy where it has one), `jvp` and
`linearize` (forward mode alone, and partially evaluated), `hessian` (jax.hessian and
jax.jacfwd of a scalar function of the outputs). Each exercises the collectives'
batching, JVP or transpose rules; the derivative modes are listed in programs/points.py
`DERIVATIVE_MODES`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from harness.run import edges
from harness.run.modes_base import Mode, Staged
from harness.run.observation import Observation, ObservedOutput
from programs.model import Program, is_float
from programs.points import (
    HESSIAN_MAX_ELEMENTS,
    cotangent,
    float_elements,
    grad_point,
    tangents,
    used_float_args,
)

VMAP_BATCH = 2  # members in a plain vmap batch (vmap_spmd: the spmd axis' size)


class Vmap(Mode):
    """jax.vmap of the shard_map over a new leading batch axis of every argument
    (in_specs describe the unbatched arguments), under jit. The oracle is the forward
    interpreter run once per batch member, stacked."""

    name = "vmap"
    spmd = False  # vmap_spmd: spmd_axis_name=p.spmd_axis(), a batch of that axis' size

    def batch_size(self, p: Program) -> int:
        axis = p.spmd_axis() if self.spmd else None
        return p.mesh.axis_size(axis) if axis else VMAP_BATCH

    def unsupported(self, p: Program) -> str:
        """Why this mode does not run `p` ('' where it does); sets the spmd axis it batches over."""
        self._axis = p.spmd_axis() if self.spmd else None
        self._in_axes = tuple(x.batched for x in p.inputs)
        self._batch = self.batch_size(p)
        if self.spmd and (self._axis is None or p.defect is not None):
            return "a defect (jax's error wording differs under vmap)" if self._axis else "no free manual axis of size > 1"
        return ""

    def run(self, p: Program) -> Observation:
        why = self.unsupported(p)
        if why:
            return Observation(self.name, status="unsupported", error_message=f"vmap_spmd: {why}")
        return super().run(p)

    def inputs(self, p: Program) -> list[np.ndarray]:
        # (an argument vmap does not batch, a Python scalar or a NumPy constant the body
        # closes over, is given once: in_axes=None, `_vmapped`)
        return edges.host_args(p, [np.stack([x.materialize(b) for b in range(self.batch_size(p))]) if x.batched else x.materialize()
                                   for x in p.inputs], batched=True)

    cacheable = True

    def _vmapped(self, f: Callable[..., Any]) -> Callable[..., Any]:
        import jax

        kw: dict[str, Any] = {} if all(self._in_axes) else {"in_axes": tuple(0 if b else None for b in self._in_axes)}
        if not any(self._in_axes):
            # (no batched argument, every one a scalar or closed over: vmap needs the size)
            kw["axis_size"] = self._batch
        return jax.vmap(f, spmd_axis_name=self._axis, **kw) if self._axis else jax.vmap(f, **kw)

    def compiled(self, f: Callable[..., Any]) -> Callable[..., Any]:
        import jax

        return jax.jit(self._vmapped(f))

    def observe(self, o: Any, p: Program) -> ObservedOutput:
        return ObservedOutput(tuple(o.shape), str(o.dtype), np.asarray(o), None)

    def stage(self, p: Program, record: Callable[[int, Any], None]) -> Staged | None:

        if self.unsupported(p):
            return None  # (`run` says why)
        return self.staged(p, self._vmapped(self.build(p, record)), self.inputs(p))


class VmapSpmd(Vmap):
    """vmap with spmd_axis_name: the batch (as long as the axis) is split over a free
    manual mesh axis, which the batching rule adds to every spec; the values must be
    those of plain vmap."""

    name, spmd = "vmap_spmd", True


class Grad(Mode):
    """Reverse and forward mode through the shard_map, under jit: for float arguments and
    float outputs, the directional derivative <u, J v> by jax.jvp and by jax.vjp (so both
    the JVP and the transpose rule of every collective are exercised). The oracle is a
    finite difference of its own float64 forward interpreter (oracles/derivatives.py).
    With check_vma=False also each output's own <u_k, J_k v> by both (`jvp_parts`,
    `vjp_parts`): jax defines the derivative only of the outputs that keep their
    out_spec's promise (oracles/derivatives.py `defined_outputs`). Programs without a
    float argument are reported as unsupported here."""

    name = "grad"
    _facts: dict[str, Any]  # this call's derivatives: reset by run, set by execute

    def applicable(self, p: Program) -> str:
        if not any(is_float(x.dtype) for x in p.inputs):
            return "no float argument"
        return ""

    def run(self, p: Program) -> Observation:
        why = self.applicable(p)
        if why:
            return Observation(self.name, status="unsupported", error_message=f"{self.name}: {why}")
        self._facts = {}
        obs = super().run(p)
        return replace(obs, facts=self._facts) if obs.status == "ok" else obs

    def inputs(self, p: Program) -> list[np.ndarray]:
        return [a.astype(x.dtype) for a, x in zip(grad_point(p), p.inputs)]

    def derive(self, g: Callable[..., Any], prim: tuple[Any, ...], tan: tuple[Any, ...], cot: tuple[Any, ...]) -> dict[str, Any]:
        """The mode's derivatives of `g` (the float outputs of the float arguments) at
        `prim`, traced: name -> a jax scalar or a tuple of them (one per output)."""
        import jax

        _, jv = jax.jvp(g, prim, tan)
        _, pullback = jax.vjp(g, *prim)
        out: dict[str, Any] = {"jvp": sum(_dot(u, t) for u, t in zip(cot, jv)),
                               "vjp": sum(_dot(c, t) for c, t in zip(pullback(cot), tan))}
        if not self._program.check_vma:  # (each output's own, for `defined_outputs`)
            import jax.numpy as jnp

            out["jvp_parts"] = tuple(_dot(u, t) for u, t in zip(cot, jv))
            out["vjp_parts"] = tuple(
                sum(_dot(c, t) for c, t in zip(pullback(tuple(u if j == k else jnp.zeros_like(u) for j, u in enumerate(cot))), tan))
                for k in range(len(cot)))
        return out

    def plan(self, f: Callable[..., Any], args: list[np.ndarray]) -> tuple[Any, list[int], Callable[..., Any], tuple[Any, ...]]:
        """(the outputs' shapes, the float outputs' indices, the function giving the
        mode's derivatives (`derive`), its arguments)."""
        import jax
        import jax.numpy as jnp

        p = self._program
        fl_idx = self.float_args(p)
        shapes = jax.eval_shape(f, *args)
        out_idx = [k for k, o in enumerate(shapes) if jnp.issubdtype(o.dtype, jnp.floating)]
        if not out_idx:
            return shapes, out_idx, lambda: None, ()

        def g(*fl: Any) -> tuple[Any, ...]:
            full = list(args)
            for i, a in zip(fl_idx, fl):
                full[i] = a
            outs = f(*full)
            return tuple(outs[k] for k in out_idx)

        # host arrays, passed to the jit as they are: jnp.asarray with a dtype would convert
        # each on the device (a compile per shape and dtype) and the jit would then reshard
        # it, both paid on every program
        # (a committed argument: committed there, as the call receives it; no Python scalar:
        # the grad modes differentiate arrays)
        args = edges.host_args(p, args, committed_only=True)
        primals = tuple(args[i] if p.inputs[i].place is not None else np.asarray(args[i]) for i in fl_idx)
        vs = tangents(p)
        # tangents and cotangents in their value's dtype (jvp and vjp require it; they hold
        # values of that dtype already, `round_to`, so the cast is exact); the final dot
        # products in float32, so only the program's own arithmetic is low precision
        tans = tuple(np.asarray(vs[i]).astype(args[i].dtype) for i in fl_idx)
        us = tuple(cotangent(k, tuple(shapes[k].shape), str(shapes[k].dtype)).astype(shapes[k].dtype) for k in out_idx)

        def both(prim: Any, tan: Any, cot: Any) -> dict[str, Any]:
            return self.derive(g, prim, tan, cot)

        return shapes, out_idx, both, (primals, tans, us)

    def float_args(self, p: Program) -> list[int]:
        """The arguments the derivatives are taken with respect to: every float one."""
        return [i for i, x in enumerate(p.inputs) if is_float(x.dtype)]

    @staticmethod
    def facts_of(out_idx: list[int], d: dict[str, Any]) -> dict[str, Any]:
        """The observation's facts: the float outputs and each derivative as floats."""
        return {"outputs": out_idx, **{k: [float(x) for x in v] if isinstance(v, (tuple, list)) else float(v) for k, v in d.items()}}

    def execute(self, f: Callable[..., Any], args: list[np.ndarray]) -> Any:
        import jax

        shapes, out_idx, both, both_args = self.plan(f, args)
        if not out_idx:
            self._facts = {"skipped": "no float output"}
            return shapes
        self._facts = self.facts_of(out_idx, jax.jit(both)(*both_args))
        return shapes

    def stage(self, p: Program, record: Callable[[int, Any], None]) -> Staged | None:
        if self.applicable(p):
            return None  # (`run` says why it is unsupported)
        f = self.build(p, record)
        shapes, out_idx, both, both_args = self.plan(f, self.inputs(p))
        if not out_idx:
            return None  # (nothing to compile: `run` skips it)

        def done(d: Any) -> tuple[tuple[ObservedOutput, ...], dict[str, Any]]:
            return tuple(self.observe(o, p) for o in shapes), self.facts_of(out_idx, d)

        return Staged(both, both_args, done)

    def build(self, p: Program, record: Callable[[int, Any], None] | None) -> Callable[..., Any]:
        self._program = p
        return super().build(p, record)

    def observe(self, o: Any, p: Program) -> ObservedOutput:
        return ObservedOutput(tuple(o.shape), str(o.dtype), None, None)


def _dot(a: Any, b: Any) -> Any:
    """<a, b> in float32 (only the program's own arithmetic is low precision)."""
    import jax.numpy as jnp

    return jnp.vdot(a.astype(jnp.float32), b.astype(jnp.float32))


class GradRemat(Grad):
    """The grad mode with the body under jax.checkpoint: rematerialisation re-runs the
    collectives in the backward pass, so their transposes meet recomputed primals. With
    the program's `remat_policy`, under that named policy of jax.checkpoint_policies
    (what it may save changes what the backward pass recomputes)."""

    name, remat = "grad_remat", True


class Jvp(Grad):
    """Forward mode alone: jax.jvp of the shard_map under jit, each float output's own
    <u_k, J_k v> (`jvp_parts`) and their sum (`jvp`); no transpose is traced."""

    name = "jvp"

    def derive(self, g: Callable[..., Any], prim: tuple[Any, ...], tan: tuple[Any, ...], cot: tuple[Any, ...]) -> dict[str, Any]:
        import jax

        _, jv = jax.jvp(g, prim, tan)
        parts = tuple(_dot(u, t) for u, t in zip(cot, jv))
        return {"jvp": sum(parts), "jvp_parts": parts}


class Linearize(Grad):
    """jax.linearize of the shard_map under jit (the JVP partially evaluated: the
    shard_map split into its known, primal part and its linear, tangent part), the
    linear function applied to the tangent: each float output's <u_k, J_k v>
    (`linearize_parts`) and their sum (`linearize`)."""

    name = "linearize"

    def derive(self, g: Callable[..., Any], prim: tuple[Any, ...], tan: tuple[Any, ...], cot: tuple[Any, ...]) -> dict[str, Any]:
        import jax

        _, lin = jax.linearize(g, *prim)
        jv = lin(*tan)
        parts = tuple(_dot(u, t) for u, t in zip(cot, jv))
        return {"linearize": sum(parts), "linearize_parts": parts}


class Hessian(Grad):
    """Second order: for the scalar s(x) = <u, outputs(x)>, v^T H v with H =
    jax.hessian(s) (forward over reverse: the JVP of every transpose rule, batched by
    jacfwd's vmap) and <jax.jacfwd(s), v> (the gradient by batched forward mode). Only
    for programs whose float arguments hold at most HESSIAN_MAX_ELEMENTS elements (the
    Hessian is dense)."""

    name = "hessian"

    def applicable(self, p: Program) -> str:
        n = float_elements(p)
        if n > HESSIAN_MAX_ELEMENTS:
            return f"{n} float argument elements (a dense Hessian of at most {HESSIAN_MAX_ELEMENTS})"
        return super().applicable(p) or ("" if self.float_args(p) else "no float argument an op reads")

    def float_args(self, p: Program) -> list[int]:
        """The used float arguments (programs/points.py `used_float_args`): an unused one
        adds only zeros to the Hessian (the oracle moves it too, to no effect)."""
        return used_float_args(p)

    def derive(self, g: Callable[..., Any], prim: tuple[Any, ...], tan: tuple[Any, ...], cot: tuple[Any, ...]) -> dict[str, Any]:
        import jax
        import jax.numpy as jnp

        def s(*xs: Any) -> Any:
            return sum(_dot(u, o) for u, o in zip(cot, g(*xs)))

        n = tuple(range(len(prim)))
        h = jax.hessian(s, argnums=n)(*prim)
        jf = jax.jacfwd(s, argnums=n)(*prim)
        v = tuple(t.astype(jnp.float32) for t in tan)
        hvp = sum(jnp.vdot(v[i], jnp.tensordot(h[i][j].astype(jnp.float32), v[j], axes=v[j].ndim)) for i in n for j in n)
        return {"hvp": hvp, "jacfwd": sum(_dot(a, b) for a, b in zip(jf, tan))}
