"""The `Mode` base class: how every mode runs a program through jax and makes its
`Observation` (the body value types read while tracing, the exception or the outputs), and
the cache of jitted callables that lets programs of the same structure skip the compile.

A mode overrides only the steps it does differently (`build`, `compiled`, `call`,
`execute`, `inputs`, `observe`); the concrete modes are in `modes_direct.py` and
`modes_transformed.py`, the registry in `modes.py`.
"""

from __future__ import annotations

import contextlib
import functools
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from harness.run import compat, edges
from harness.run.lowering import make_body, to_pspec
from harness.run.observation import DonatedArg, EffectCall, Observation, ObservedOutput
from programs.model import Program
from programs.serialize import program_id


def _inputs(p: Program) -> list[np.ndarray]:
    return [x.materialize() for x in p.inputs]


def structure_key(p: Program) -> str:
    """The program with its input values left out: programs with the same key trace and
    compile to the same executable (a NumPy constant the body closes over is part of it:
    its values are in the trace)."""
    return program_id(replace(p, inputs=tuple(x if x.closure == "numpy" else replace(x, seed=0, fill="small")
                                              for x in p.inputs)))


# (mode, structure key) -> (the jitted callable, the body value types its trace saw, and
# their unreduced / reduced axes);
# bounded, least recently used out first, emptied with jax.clear_caches (worker.py)
COMPILED: OrderedDict[tuple[str, str], tuple[Callable[..., Any], dict[int, Any], dict[int, Any]]] = OrderedDict()
COMPILED_MAX = 256


Types = dict[int, tuple[tuple[int, ...], str, frozenset[str] | None]]
URs = dict[int, tuple[frozenset[str], frozenset[str]]]


def recorder() -> tuple[Callable[[int, Any], None], Types, URs]:
    """A `record(i, v)` for the body (harness/run/lowering.py `make_body`) and the two
    tables it fills: each body value's (shape, dtype, varying axes) and its (unreduced,
    reduced) axes, as the first trace saw them."""
    types: Types = {}
    urs: URs = {}

    def record(i: int, v: Any) -> None:
        if i not in types:
            types[i] = (tuple(v.shape), str(v.dtype), compat.vma_of(v))
            ur = compat.ur_of(v)
            if ur is not None:
                urs[i] = ur

    return record, types, urs


@dataclass(frozen=True)
class Staged:
    """One mode's part of a run together (`Mode.stage`): `fn(*args)` is traced inside the
    one jit; `done` turns its concrete result into the mode's outputs and facts."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    done: Callable[[Any], tuple[tuple[ObservedOutput, ...], dict[str, Any]]]


class Mode:
    name: str = ""
    values: bool = True  # whether this mode produces output values

    remat: bool = False  # wrap the body in jax.checkpoint

    def build(self, p: Program, record: Callable[[int, Any], None] | None) -> Callable[..., Any]:
        def make() -> Callable[..., Any]:
            mesh = compat.make_mesh(p.mesh.names, p.mesh.sizes, p.mesh.axis_types)
            # (the arguments the body closes over are not the shard_map's: no in_spec)
            in_specs = tuple(to_pspec(p.in_specs[i]) for i in p.passed) if len(p.passed) < len(p.inputs) else \
                tuple(to_pspec(s) for s in p.in_specs)
            out_specs = tuple(to_pspec(s) for s in p.out_specs)

            def shard_mapped(closed: dict[int, Any] | None) -> Callable[..., Any]:
                return compat.shard_map(
                    self.body(p, record, closed),
                    None if p.mesh_context else mesh,  # None: the mesh from jax.set_mesh (mesh_scope)
                    in_specs,
                    out_specs,
                    None if p.axis_names is None else frozenset(p.axis_names),
                    p.check_vma,
                    p.form,
                )

            # a body closing over arguments: the shard_map is made inside the called
            # function, when it is called (harness/run/edges.py `closing`)
            f = shard_mapped(None) if len(p.passed) == len(p.inputs) else edges.closing(p, shard_mapped)
            return edges.traced(p, compat.with_reshard(p, f))

        # auto_axes / explicit_axes around the call: the shard_map is made inside the
        # wrapper, where the context mesh has the wrapped axes retyped
        return make() if p.wrap is None else compat.with_wrap(p, make)

    effects: bool = True  # this mode makes the body's effects (Program.effects)
    donates: bool = False  # this mode jits the call with donate_argnums=Program.donate

    def body(self, p: Program, record: Callable[[int, Any], None] | None,
             closed: dict[int, Any] | None = None) -> Callable[..., Any]:
        """The shard_map body this mode runs (under jax.checkpoint for `remat`)."""
        emit = functools.partial(edges.emit, p) if p.effects and self.effects else None
        body = make_body(p, record, closed, emit)
        if self.remat:
            import jax

            # (a named policy of jax.checkpoint_policies where the program has one)
            policy = getattr(jax.checkpoint_policies, p.remat_policy) if p.remat_policy else None
            body = jax.checkpoint(body, policy=policy)
        return body

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
        return edges.host_args(p, _inputs(p))

    def run(self, p: Program) -> Observation:
        missing = compat.unsupported_features(p, self.name)
        if missing:
            return Observation(self.name, status="unsupported", error_message="; ".join(missing))
        with compat.x64_scope(p.x64):  # a program naming float64 runs with jax_enable_x64 on
            return self._run(p)

    def stage(self, p: Program, record: Callable[[int, Any], None]) -> Staged | None:
        """This mode's run of `p` as a function to trace inside one jit with other modes'
        (harness/run/together.py), or None where the mode runs `p` only on its own (no
        compile to share, or nothing to compute: `run` says why). Called under the
        program's scopes (`run`)."""
        return None

    def staged(self, p: Program, fn: Callable[..., Any], args: list[np.ndarray]) -> Staged:
        """`fn(*args)` staged with this mode's own reading of its outputs (`observe`)."""
        return Staged(fn, tuple(args), lambda outs: (tuple(self.observe(o, p) for o in outs), {}))

    def _run(self, p: Program) -> Observation:
        record, types, urs = recorder()
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
                value_ur=urs,
            )

        key = (self.name, structure_key(p)) if self.cacheable else None
        effects = bool(p.effects) and self.effects
        calls: tuple[EffectCall, ...] = ()
        donated: tuple[DonatedArg, ...] = ()
        # jax.set_mesh where the program needs it; jax flags it needs (the permute-order check);
        # sys.stdout gathered where the body prints (its jax.debug.print effects)
        printing = any(e.kind == "print" for e in p.effects) and effects
        with compat.mesh_scope(p), compat.program_config(p), edges.printed() if printing else contextlib.nullcontext() as out:
            edges.CALLS.clear()
            try:
                args = self.inputs(p)
                hit = COMPILED.get(key) if key else None
                if hit is not None:  # the same program but for input values: no trace, no compile
                    COMPILED.move_to_end(key)  # type: ignore[arg-type]
                    types.update(hit[1])
                    urs.update(hit[2])
                    outs = self.call(hit[0], args)
                elif key is None:
                    outs = self.execute(self.build(p, record), args)
                else:
                    g = self.compiled(self.build(p, record))
                    outs = self.call(g, args)
                    COMPILED[key] = (g, dict(types), dict(urs))
                    while len(COMPILED) > COMPILED_MAX:
                        COMPILED.popitem(last=False)
                if effects:
                    import jax

                    jax.effects_barrier()
                    calls = edges.collect(p, out.getvalue() if printing else "")
                if self.donates and p.donate:
                    donated = edges.donated_state(p, args)
            except Exception as e:
                return raised(e)
            observed_list = []
            for k, o in enumerate(outs):
                try:
                    observed_list.append(self.observe(o, p))
                except Exception as e:  # jax produced an output that cannot be read back: which one
                    return raised(e, f"read_output:{k}")
            observed = tuple(observed_list)
        return Observation(self.name, outputs=observed, value_types=types, elapsed_s=time.perf_counter() - t0, value_ur=urs,
                           calls=calls, donated=donated)

    def observe(self, o: Any, p: Program) -> ObservedOutput:
        blocks: dict[tuple[int, ...], np.ndarray] = {}
        for s in o.addressable_shards:
            coord = tuple(int(c) for c in np.unravel_index(s.device.id, p.mesh.sizes))
            blocks[coord] = np.asarray(s.data)
        sharding = compat.sharding_type_of(o)
        # an unreduced array has no global value jax will assemble (jax 0.10.2:
        # "device_indices_map doesn't work with unreduced"): its blocks are its parts
        glob = None if sharding is not None and sharding[1] else np.asarray(o)
        return ObservedOutput(tuple(o.shape), str(o.dtype), glob, blocks, sharding)
