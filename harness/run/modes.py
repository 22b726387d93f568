"""Modes: one way of running a program through real jax. Each has `run(program)`.

- `abstract`: `jax.eval_shape` of the shard_map (errors, shapes, dtypes; the vma of every
  body value read with `jax.typeof` while tracing). No compile.
- `eager`: the shard_map called directly, outside jit.
- `jit`: `jax.jit` of the shard_map.
"""

from __future__ import annotations

import re
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from harness.run import compat
from harness.run.lowering import make_body, to_pspec
from programs.model import Program


@dataclass(frozen=True, eq=False)
class ObservedOutput:
    global_shape: tuple[int, ...]
    dtype: str
    global_value: np.ndarray | None  # None in the abstract mode
    device_values: dict[tuple[int, ...], np.ndarray] | None  # mesh coord -> block


@dataclass(frozen=True, eq=False)
class Observation:
    """What jax did with one program in one mode."""

    mode: str
    error_type: str | None = None  # exception class name
    error_message: str = ""
    error_traceback: str = ""
    outputs: tuple[ObservedOutput, ...] = ()
    value_types: dict[int, tuple[tuple[int, ...], str, frozenset[str] | None]] = field(default_factory=dict)
    elapsed_s: float = 0.0
    status: str = "ok"  # ok | error | crash | timeout | unsupported
    phase: str = ""  # where an error arose: "" (building/tracing/running) or "read_output"
    facts: dict[str, Any] = field(default_factory=dict)  # mode-specific facts (lowering text, derivatives)

    @property
    def raised(self) -> bool:
        return self.error_type is not None


VMAP_BATCH = 2


def _inputs(p: Program) -> list[np.ndarray]:
    return [x.materialize() for x in p.inputs]


def structure_key(p: Program) -> str:
    """The program with its input values left out: programs with the same key trace and
    compile to the same executable."""
    from programs.serialize import program_id

    return program_id(replace(p, inputs=tuple(replace(x, seed=0, fill="small") for x in p.inputs)))


# (mode, structure key) -> (the jitted callable, the body value types its trace saw);
# bounded, least recently used out first, emptied with jax.clear_caches (worker.py)
COMPILED: OrderedDict[tuple[str, str], tuple[Callable[..., Any], dict[int, Any]]] = OrderedDict()
COMPILED_MAX = 256


class Mode:
    name: str = ""
    values: bool = True  # whether this mode produces output values

    remat: bool = False  # wrap the body in jax.checkpoint

    def build(self, p: Program, record: Callable[[int, Any], None] | None) -> Callable[..., Any]:
        mesh = compat.make_mesh(p.mesh.names, p.mesh.sizes, p.mesh.axis_types)
        in_specs = tuple(to_pspec(s) for s in p.in_specs)
        out_specs = tuple(to_pspec(s) for s in p.out_specs)
        body = make_body(p, record)
        if self.remat:
            import jax

            body = jax.checkpoint(body)
        return compat.shard_map(
            body,
            mesh,
            in_specs,
            out_specs,
            None if p.axis_names is None else frozenset(p.axis_names),
            p.check_vma,
        )

    def execute(self, f: Callable[..., Any], args: list[np.ndarray]) -> Any:
        return self.call(self.compiled(f), args)

    def compiled(self, f: Callable[..., Any]) -> Callable[..., Any]:
        """The one jitted callable this mode runs `f` as (modes that are a single jit:
        their compiles are cached by program structure, see COMPILED)."""
        raise NotImplementedError

    def call(self, g: Callable[..., Any], args: list[np.ndarray]) -> Any:
        import jax

        outs = g(*args)
        jax.block_until_ready(outs)
        return outs

    cacheable: bool = False  # `compiled` is the whole mode: reuse it for the same structure

    def inputs(self, p: Program) -> list[np.ndarray]:
        return _inputs(p)

    def run(self, p: Program) -> Observation:
        missing = compat.unsupported_features(p, self.name)
        if missing:
            return Observation(self.name, status="unsupported", error_message="; ".join(missing))
        types: dict[int, tuple[tuple[int, ...], str, frozenset[str] | None]] = {}

        def record(i: int, v: Any) -> None:
            if i not in types:
                types[i] = (tuple(v.shape), str(v.dtype), compat.vma_of(v))

        t0 = time.perf_counter()

        def raised(e: Exception, phase: str = "") -> Observation:  # the observation IS the exception
            return Observation(
                self.name,
                type(e).__name__,
                str(e),
                traceback.format_exc(limit=-8),
                value_types=types,
                elapsed_s=time.perf_counter() - t0,
                status="error",
                phase=phase,
            )

        key = (self.name, structure_key(p)) if self.cacheable else None
        try:
            hit = COMPILED.get(key) if key else None
            if hit is not None:  # the same program but for input values: no trace, no compile
                COMPILED.move_to_end(key)  # type: ignore[arg-type]
                types.update(hit[1])
                outs = self.call(hit[0], self.inputs(p))
            elif key is None:
                outs = self.execute(self.build(p, record), self.inputs(p))
            else:
                g = self.compiled(self.build(p, record))
                outs = self.call(g, self.inputs(p))
                COMPILED[key] = (g, dict(types))
                while len(COMPILED) > COMPILED_MAX:
                    COMPILED.popitem(last=False)
        except Exception as e:
            return raised(e)
        try:
            observed = tuple(self.observe(o, p) for o in outs)
        except Exception as e:  # jax produced outputs that cannot be read back
            return raised(e, "read_output")
        return Observation(self.name, outputs=observed, value_types=types, elapsed_s=time.perf_counter() - t0)

    def observe(self, o: Any, p: Program) -> ObservedOutput:
        blocks: dict[tuple[int, ...], np.ndarray] = {}
        for s in o.addressable_shards:
            coord = tuple(int(c) for c in np.unravel_index(s.device.id, p.mesh.sizes))
            blocks[coord] = np.asarray(s.data)
        return ObservedOutput(tuple(o.shape), str(o.dtype), np.asarray(o), blocks)


def _shapes_only(p: Program) -> list[Any]:
    """The arguments' shapes and dtypes (no values: nothing is run)."""
    import jax

    return [jax.ShapeDtypeStruct(x.shape, np.dtype(x.dtype)) for x in p.inputs]


class Abstract(Mode):
    name, values = "abstract", False

    def inputs(self, p: Program) -> list[Any]:
        return _shapes_only(p)

    def execute(self, f: Callable[..., Any], args: list[np.ndarray]) -> Any:
        import jax

        return jax.eval_shape(f, *[jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args])

    def observe(self, o: Any, p: Program) -> ObservedOutput:
        return ObservedOutput(tuple(o.shape), str(o.dtype), None, None)


class Eager(Mode):
    name = "eager"

    def execute(self, f: Callable[..., Any], args: list[np.ndarray]) -> Any:
        import jax

        outs = f(*args)
        jax.block_until_ready(outs)
        return outs


class Jit(Mode):
    name, cacheable = "jit", True

    def compiled(self, f: Callable[..., Any]) -> Callable[..., Any]:
        import jax

        return jax.jit(f)


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

        prev = jax.config.jax_use_shardy_partitioner
        jax.config.update("jax_use_shardy_partitioner", False)
        try:
            return super().call(g, args)
        finally:
            jax.config.update("jax_use_shardy_partitioner", prev)


class Vmap(Mode):
    """jax.vmap of the shard_map over a new leading batch axis of every argument
    (in_specs describe the unbatched arguments), under jit. The oracle is the forward
    interpreter run once per batch member, stacked."""

    name = "vmap"
    spmd = False  # vmap_spmd: spmd_axis_name=p.spmd_axis(), a batch of that axis' size

    def batch_size(self, p: Program) -> int:
        axis = p.spmd_axis() if self.spmd else None
        return p.mesh.axis_size(axis) if axis else VMAP_BATCH

    def run(self, p: Program) -> Observation:
        self._axis = p.spmd_axis() if self.spmd else None
        if self.spmd and (self._axis is None or p.defect is not None):
            why = "a defect (jax's error wording differs under vmap)" if self._axis else "no free manual axis of size > 1"
            return Observation(self.name, status="unsupported", error_message=f"vmap_spmd: {why}")
        return super().run(p)

    def inputs(self, p: Program) -> list[np.ndarray]:
        return [np.stack([x.materialize(b) for b in range(self.batch_size(p))]) for x in p.inputs]

    cacheable = True

    def compiled(self, f: Callable[..., Any]) -> Callable[..., Any]:
        import jax

        return jax.jit(jax.vmap(f, spmd_axis_name=self._axis) if self._axis else jax.vmap(f))

    def observe(self, o: Any, p: Program) -> ObservedOutput:
        return ObservedOutput(tuple(o.shape), str(o.dtype), np.asarray(o), None)


def probe_program(p: Program) -> Program:
    """`p` with every rank >= 1 body value as an output, each split over all manual axes
    on dimension 0 and check_vma=False, so each device's block of each value comes back
    as it is. Used to find the first op whose values go wrong."""
    from dataclasses import replace as _replace

    from oracles import trace
    from programs.model import Spec

    st, _ = trace(p, with_values=False)
    n_in = len(p.inputs)
    vals = tuple(v for v in range(n_in, len(st.types)) if len(st.types[v].shape) >= 1)
    axes = p.manual_axes
    spec = Spec((axes,) if axes else ())
    return _replace(p, outputs=vals, out_specs=(spec,) * len(vals), check_vma=False)


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
        return jax.smap(make_body(p, record), in_axes=ins, out_axes=outs, axis_name=axis)

    def execute(self, f: Callable[..., Any], args: list[np.ndarray]) -> Any:
        import jax

        with jax.set_mesh(self._mesh):
            outs = jax.jit(f)(*args)
            jax.block_until_ready(outs)
        return outs


class VmapSpmd(Vmap):
    """vmap with spmd_axis_name: the batch (as long as the axis) is split over a free
    manual mesh axis, which the batching rule adds to every spec; the values must be
    those of plain vmap."""

    name, spmd = "vmap_spmd", True


class Probe(Mode):
    """jit of `probe_program(p)`: per-device blocks of every body value (localisation)."""

    name = "probe"

    def run(self, p: Program) -> Observation:
        q = probe_program(p)
        if not q.outputs:
            return Observation(self.name, status="unsupported", error_message="probe: no rank >= 1 body value")
        obs = Jit.run(self, q)  # type: ignore[arg-type]
        return replace(obs, mode=self.name, facts={"values": list(q.outputs)})

    def execute(self, f: Callable[..., Any], args: list[np.ndarray]) -> Any:
        import jax

        return self.call(jax.jit(f), args)


class Grad(Mode):
    """Reverse and forward mode through the shard_map, under jit: for float arguments and
    float outputs, the directional derivative <u, J v> by jax.jvp and by jax.vjp (so both
    the JVP and the transpose rule of every collective are exercised). The oracle is a
    finite difference of its own float64 forward interpreter (oracles/derivatives.py).
    Programs without float arguments and outputs, or with check_vma=False (whose global
    outputs are not defined where blocks differ), are reported as unsupported here."""

    name = "grad"

    def applicable(self, p: Program) -> str:
        if not p.check_vma:
            return "check_vma=False"
        if not any(x.dtype == "float32" for x in p.inputs):
            return "no float32 argument"
        return ""

    def run(self, p: Program) -> Observation:
        why = self.applicable(p)
        if why:
            return Observation(self.name, status="unsupported", error_message=f"grad: {why}")
        self._facts = {}
        obs = super().run(p)
        return replace(obs, facts=self._facts) if obs.status == "ok" else obs

    def inputs(self, p: Program) -> list[np.ndarray]:
        from programs.points import grad_point

        return [a.astype(x.dtype) for a, x in zip(grad_point(p), p.inputs)]

    def execute(self, f: Callable[..., Any], args: list[np.ndarray]) -> Any:
        import jax
        import jax.numpy as jnp

        from programs.points import cotangent, tangents

        p = self._program
        fl_idx = [i for i, x in enumerate(p.inputs) if x.dtype == "float32"]
        shapes = jax.eval_shape(f, *args)
        out_idx = [k for k, o in enumerate(shapes) if o.dtype == jnp.float32]
        if not out_idx:
            self._facts = {"skipped": "no float32 output"}
            return shapes

        def g(*fl: Any) -> tuple[Any, ...]:
            full = list(args)
            for i, a in zip(fl_idx, fl):
                full[i] = a
            outs = f(*full)
            return tuple(outs[k] for k in out_idx)

        primals = tuple(jnp.asarray(args[i]) for i in fl_idx)
        vs = tangents(p)
        tans = tuple(jnp.asarray(vs[i], dtype=jnp.float32) for i in fl_idx)
        us = tuple(jnp.asarray(cotangent(k, tuple(shapes[k].shape)), dtype=jnp.float32) for k in out_idx)

        @jax.jit
        def both(prim: Any, tan: Any, cot: Any) -> tuple[Any, Any]:
            _, jv = jax.jvp(g, prim, tan)
            d_jvp = sum(jnp.vdot(u, t) for u, t in zip(cot, jv))
            _, pullback = jax.vjp(g, *prim)
            cts = pullback(cot)
            d_vjp = sum(jnp.vdot(c, t) for c, t in zip(cts, tan))
            return d_jvp, d_vjp

        d_jvp, d_vjp = both(primals, tans, us)
        self._facts = {"outputs": out_idx, "jvp": float(d_jvp), "vjp": float(d_vjp)}
        return shapes

    def build(self, p: Program, record: Callable[[int, Any], None] | None) -> Callable[..., Any]:
        self._program = p
        return super().build(p, record)

    def observe(self, o: Any, p: Program) -> ObservedOutput:
        return ObservedOutput(tuple(o.shape), str(o.dtype), None, None)


class GradRemat(Grad):
    """The grad mode with the body under jax.checkpoint: rematerialisation re-runs the
    collectives in the backward pass, so their transposes meet recomputed primals."""

    name, remat = "grad_remat", True


class Lowering(Mode):
    """The jit lowering text (StableHLO with Shardy): one sdy.manual_computation whose
    manual axes, shardings and block shapes follow from the program; none at all when
    every newly manual axis has size 1."""

    name, values = "lowering", False

    def inputs(self, p: Program) -> list[Any]:
        return _shapes_only(p)

    def execute(self, f: Callable[..., Any], args: list[np.ndarray]) -> Any:
        import jax

        lowered = jax.jit(f, keep_unused=True).lower(*[jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args])
        self._facts = lowering_facts(lowered.as_text())
        return jax.eval_shape(f, *[jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args])

    def observe(self, o: Any, p: Program) -> ObservedOutput:
        return ObservedOutput(tuple(o.shape), str(o.dtype), None, None)

    def run(self, p: Program) -> Observation:
        self._facts: dict[str, Any] = {}
        obs = super().run(p)
        return replace(obs, facts=self._facts)


MODES: dict[str, Mode] = {
    m.name: m for m in (Abstract(), Eager(), Jit(), Gspmd(), Vmap(), VmapSpmd(), Smap(), Grad(), GradRemat(), Lowering(), Probe())
}
DEFAULT_MODES = ("abstract", "jit", "gspmd", "eager", "vmap", "vmap_spmd", "smap", "grad", "grad_remat", "lowering")


# ------------------------------------------------------------------ wire format
# Observations cross process boundaries (worker processes, other Python environments)
# as JSON: arrays as dtype, shape and base64 bytes.


def _arr_to(a: np.ndarray) -> dict[str, Any]:
    import base64

    a = np.array(a, order="C")  # (ascontiguousarray would turn a 0-d array into 1-d)
    return {"dtype": str(a.dtype), "shape": list(a.shape), "b64": base64.b64encode(a.tobytes()).decode()}


def _arr_from(d: dict[str, Any]) -> np.ndarray:
    import base64

    return np.frombuffer(base64.b64decode(d["b64"]), dtype=d["dtype"]).reshape(d["shape"]).copy()


def observation_to_dict(o: Observation) -> dict[str, Any]:
    return {
        "mode": o.mode,
        "status": o.status,
        "error_type": o.error_type,
        "error_message": o.error_message,
        "error_traceback": o.error_traceback,
        "elapsed_s": o.elapsed_s,
        "phase": o.phase,
        "facts": o.facts,
        "value_types": [[i, list(s), dt, None if v is None else sorted(v)] for i, (s, dt, v) in o.value_types.items()],
        "outputs": [
            {
                "global_shape": list(x.global_shape),
                "dtype": x.dtype,
                "global_value": None if x.global_value is None else _arr_to(x.global_value),
                "device_values": None
                if x.device_values is None
                else [[list(c), _arr_to(v)] for c, v in x.device_values.items()],
            }
            for x in o.outputs
        ],
    }


def observation_from_dict(d: dict[str, Any]) -> Observation:
    return Observation(
        mode=d["mode"],
        error_type=d["error_type"],
        error_message=d["error_message"],
        error_traceback=d.get("error_traceback", ""),
        outputs=tuple(
            ObservedOutput(
                tuple(x["global_shape"]),
                x["dtype"],
                None if x["global_value"] is None else _arr_from(x["global_value"]),
                None if x["device_values"] is None else {tuple(c): _arr_from(v) for c, v in x["device_values"]},
            )
            for x in d["outputs"]
        ),
        value_types={int(i): (tuple(s), dt, None if v is None else frozenset(v)) for i, s, dt, v in d["value_types"]},
        elapsed_s=float(d["elapsed_s"]),
        status=d["status"],
        phase=d.get("phase", ""),
        facts=d.get("facts", {}),
    )
