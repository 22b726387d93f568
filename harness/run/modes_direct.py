"""The modes that run the shard_map itself, untransformed: `abstract` (jax.eval_shape),
`eager`, `jit` (Shardy), `gspmd`, `smap` (the same program as jax.smap), `lowering` (the
Shardy lowering text and what it says about the manual region) and the internal `probe`
(every body value's blocks, to localise a wrong value).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from harness.run import compat, edges
from harness.run.lowering import make_body
from harness.run.modes_base import Mode, Staged
from harness.run.observation import Observation, ObservedOutput
from oracles import trace
from programs.model import Program, Spec


def _shapes_only(p: Program) -> list[Any]:
    """The arguments' shapes and dtypes (no values: nothing is run)."""
    import jax

    return [jax.ShapeDtypeStruct(x.shape, np.dtype(x.dtype)) for x in p.inputs]


class Abstract(Mode):
    name, values = "abstract", False

    def inputs(self, p: Program) -> list[Any]:
        return edges.host_shapes(p, _shapes_only(p))

    def execute(self, f: Callable[..., Any], args: list[np.ndarray]) -> Any:
        import jax

        return jax.eval_shape(f, *[edges.abstract(a) for a in args])

    def observe(self, o: Any, p: Program) -> ObservedOutput:
        return ObservedOutput(tuple(o.shape), str(o.dtype), None, None, compat.sharding_type_of(o))


class Eager(Mode):
    name = "eager"

    def execute(self, f: Callable[..., Any], args: list[np.ndarray]) -> Any:
        import jax

        outs = f(*args)
        jax.block_until_ready(outs)
        return outs


class Jit(Mode):
    name, cacheable, donates = "jit", True, True
    _donate: tuple[int, ...] = ()  # this call's Program.donate: set by run

    def run(self, p: Program) -> Observation:
        self._donate = p.donate
        return super().run(p)

    def compiled(self, f: Callable[..., Any]) -> Callable[..., Any]:
        import jax

        return jax.jit(f, donate_argnums=self._donate) if self._donate else jax.jit(f)

    def stage(self, p: Program, record: Callable[[int, Any], None]) -> Staged | None:
        return self.staged(p, self.build(p, record), self.inputs(p))


_REGION = re.compile(
    r"sdy\.manual_computation\((?P<args>[^)]*)\) in_shardings=\[(?P<ins>.*?)\] "
    r"out_shardings=\[(?P<outs>.*?)\] manual_axes=\{(?P<manual>[^}]*)\} \((?P<block>[^)]*)\)"
)
_SHARDING = re.compile(r"<@\w+, \[(.*?)\]")
_DIM = re.compile(r"\{([^}]*)\}")
_TENSOR = re.compile(r"tensor<((?:\d+x)*)[a-z]+\d*>")


def _dims(sharding: str) -> list[list[str]]:
    """'{"x"}, {}, {"y", ?}' -> [['x'], [], ['y']] (open dims '?' dropped)."""
    return [[t.strip().strip('"') for t in d.split(",") if t.strip() and t.strip() != "?"] for d in _DIM.findall(sharding)]


def lowering_facts(text: str) -> dict[str, Any]:
    """What the jit lowering says about the shard_map: how many manual regions, their
    manual axes, in/out shardings (axes per dimension) and per-device block shapes."""
    regions = [m for m in _REGION.finditer(text)]
    facts: dict[str, Any] = {"regions": len(regions)}
    facts["region_manual_axes"] = [
        sorted(a.strip().strip('"') for a in m["manual"].split(",") if a.strip()) for m in regions
    ]
    if regions:
        m = regions[0]  # the outermost: nested helper regions (axis_index) come later
        facts["manual_axes"] = facts["region_manual_axes"][0]
        facts["in_shardings"] = [_dims(s) for s in _SHARDING.findall(m["ins"])]
        facts["out_shardings"] = [_dims(s) for s in _SHARDING.findall(m["outs"])]
        facts["block_shapes"] = [[int(n) for n in t.split("x") if n] for t in _TENSOR.findall(m["block"])]
    return facts


class Gspmd(Jit):
    """jit with the GSPMD partitioner (jax_use_shardy_partitioner=False) where the
    installed jax still has it; Shardy is the default and is what `jit` runs."""

    name = "gspmd"

    def call(self, g: Callable[..., Any], args: list[np.ndarray]) -> Any:
        import jax

        prev = jax.config.jax_use_shardy_partitioner  # type: ignore[attr-defined]
        jax.config.update("jax_use_shardy_partitioner", False)
        try:
            return super().call(g, args)
        finally:
            jax.config.update("jax_use_shardy_partitioner", prev)



def probe_values(p: Program) -> tuple[int, ...]:
    """The body values the probe returns (`probe_program`), numbered as in `p`: every one
    but those the oracle types unreduced or reduced and the values computed from them.
    The probe runs with check_vma=False, which types every value invariant, and jax then
    refuses to make one unreduced or reduced (pcast(to='unreduced') raises 'Unsupported
    pcast from=invarying', jax 0.10.2): without the leaving out, one such op anywhere in
    the body made every probe fail and no wrong value was put on its op."""
    st, _ = trace(p, with_values=False)
    n_in = len(p.inputs)
    left_out: set[int] = set()
    for v in range(n_in, p.n_values):
        t = st.types[v] if v < len(st.types) else None
        if t is None or t.unreduced or t.reduced or any(j in left_out for j in p.body[v - n_in].operands):
            left_out.add(v)
    return tuple(v for v in range(n_in, p.n_values) if v not in left_out)


def probe_program(p: Program) -> Program:
    """`p` with the body values `probe_values(p)` as its outputs (the other ops left
    out, values renumbered), each split over all manual axes on dimension 0 and
    check_vma=False, so each device's block of each value comes back as it is (a rank-0
    value comes back as a (1,) block: `Probe.build`). Used to find the first op whose
    values go wrong."""
    n_in = len(p.inputs)
    vals = probe_values(p)
    new = {v: v for v in range(n_in)} | {v: n_in + k for k, v in enumerate(vals)}
    body = tuple(replace(p.body[v - n_in], operands=tuple(new[j] for j in p.body[v - n_in].operands)) for v in vals)
    axes = p.manual_axes
    spec = Spec((axes,) if axes else ())
    # (without auto_axes / explicit_axes around the call: the body runs under the mesh
    # the wrapper gives it, `p.mesh`, its values are the same, and auto_axes' out_sharding
    # is one spec per output)
    return replace(p, body=body, outputs=tuple(new[v] for v in vals), out_specs=(spec,) * len(vals), check_vma=False,
                    form=replace(p.form, out_specs="tuple"),
                    wrap=None, wrap_axes=(), wrap_specs=(), effects=(), donate=())


class Smap(Mode):
    """The same program written with `jax.smap(body, in_axes=, out_axes=, axis_name=)`
    (single-axis shard_map, under `jax.set_mesh`), under jit, for programs that have
    that form (`Program.smap_form`); the values must be the shard_map's."""

    name = "smap"

    def run(self, p: Program) -> Observation:
        form = p.smap_form()
        if isinstance(form, str):
            return Observation(self.name, status="unsupported", error_message=f"smap: {form}")
        self._form, self._mesh = form, compat.make_mesh(p.mesh.names, p.mesh.sizes, p.mesh.axis_types)
        return super().run(p)

    def build(self, p: Program, record: Callable[[int, Any], None] | None) -> Callable[..., Any]:
        import jax

        axis, ins, outs = self._form
        return edges.traced(p, compat.with_reshard(p, jax.smap(make_body(p, record), in_axes=ins, out_axes=outs, axis_name=axis)))

    def execute(self, f: Callable[..., Any], args: list[np.ndarray]) -> Any:
        import jax

        with jax.set_mesh(self._mesh):
            outs = jax.jit(f)(*args)
            jax.block_until_ready(outs)
        return outs



class Probe(Mode):
    """`probe_program(p)` run the way mode `base` runs a program (jit, eager or gspmd):
    per-device blocks of every body value, to put a wrong value on the first op that
    goes wrong in the mode where it went wrong."""

    name = "probe"
    base = "jit"

    def run(self, p: Program) -> Observation:
        q = probe_program(p)
        if not q.outputs:
            return Observation(self.name, status="unsupported", error_message="probe: no body value")
        obs = Mode.run(self, q)
        return replace(obs, mode=self.name, facts={"values": list(probe_values(p))})

    effects = False  # (the probe reads every value; the program's effects are checked by the mode it probes)

    def body(self, p: Program, record: Callable[[int, Any], None] | None,
             closed: dict[int, Any] | None = None) -> Callable[..., Any]:
        import jax.numpy as jnp

        body = make_body(p, record, closed)

        def probed(*args: Any) -> tuple[Any, ...]:  # rank 0 cannot be split: a (1,) block each
            return tuple(jnp.reshape(v, (1,)) if jnp.ndim(v) == 0 else v for v in body(*args))

        return probed

    def execute(self, f: Callable[..., Any], args: list[np.ndarray]) -> Any:
        return PROBE_BASES[self.base].execute(f, args)


class ProbeEager(Probe):
    name, base = "probe_eager", "eager"


class ProbeGspmd(Probe):
    name, base = "probe_gspmd", "gspmd"


class Lowering(Mode):
    """The jit lowering text (StableHLO with Shardy): one sdy.manual_computation whose
    manual axes, shardings and block shapes follow from the program; none at all when
    every newly manual axis has size 1."""

    name, values = "lowering", False
    _facts: dict[str, Any]  # this call's lowering facts: reset by run, set by execute

    def inputs(self, p: Program) -> list[Any]:
        return edges.host_shapes(p, _shapes_only(p))

    def execute(self, f: Callable[..., Any], args: list[np.ndarray]) -> Any:
        import jax

        lowered = jax.jit(f, keep_unused=True).lower(*[edges.abstract(a) for a in args])
        self._facts = lowering_facts(lowered.as_text())
        return jax.eval_shape(f, *[edges.abstract(a) for a in args])

    def observe(self, o: Any, p: Program) -> ObservedOutput:
        return ObservedOutput(tuple(o.shape), str(o.dtype), None, None)

    def run(self, p: Program) -> Observation:
        self._facts = {}
        obs = super().run(p)
        return replace(obs, facts=self._facts)


# how each probe runs its program: as the mode whose wrong value it localises
PROBE_BASES: dict[str, Mode] = {"jit": Jit(), "eager": Eager(), "gspmd": Gspmd()}
# the probe for a wrong value in each mode (the transformed modes: the jit probe)
PROBE_FOR = {"jit": "probe", "eager": "probe_eager", "gspmd": "probe_gspmd"}
