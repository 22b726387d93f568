"""The checks shard_map makes outside the body, in the order jax 0.10.2 makes them.

Before tracing (`_shmap_checks`, `_check_specs_vs_args` in jax/_src/shard_map.py):
  1. every in_spec is a PartitionSpec, then every in_spec names only manual axes;
  2. the same for out_specs;
  3. in_specs match the arguments' structure;
  4. no in_spec is longer than its argument's rank; every split dimension divides;
  5. no in_spec names a mesh axis twice (DuplicateSpecError from NamedSharding).
After tracing the body:
  6. out_specs match the outputs' structure (a None out_spec is an empty subtree, so it
     does not), no out_spec is longer than its output's rank, no out_spec repeats an axis,
     and with check_vma=True every axis an output varies along is named in its out_spec.

0. How the call is written (`check_call_form`, programs/model.py CallForm): in_specs
   left out need every manual axis Explicit (then jax infers them from the arguments'
   types; `_shmap_checks`, before any spec check); one spec for every argument or output
   is a prefix of them all; a list of specs is no prefix of the arguments' tuple (step
   3) nor of the body's result tuple (step 6).

Each check raises `OracleError` with the facts jax's message must name. A None in_spec
is not an error: jax 0.10.2's `shard_map` docstring says "If ``None``, inputs will be
treated as static", and a static argument reaches every device whole (its global value,
invariant: no varying axes), as P() would give it. A None out_spec is an empty pytree
(a structure error after tracing, step 6).
"""

from __future__ import annotations

from dataclasses import replace

from oracles.prediction import ErrorKind, OracleError, PredictedError, ValueType
from programs.model import Program, Spec


def _fail(kind: ErrorKind, why: str, *facts: str, output: int | None = None) -> OracleError:
    return OracleError(PredictedError(kind, tuple(facts), why, output=output))


def check_call_form(p: Program) -> Program:
    """Step 0 (jax 0.10.2 `jax.shard_map`'s docstring: "If ``Infer``, all mesh axes must
    be of type `Explicit`, in which case the in_specs are inferred from the argument
    types"; `_shmap_checks` raises TypeError otherwise, naming the axis types): returns
    `p` with its specs as jax reads them, one per argument and output (a single spec is
    broadcast to all: a pytree prefix of every one)."""
    if p.form.in_specs == "omitted":
        auto = [a for a in p.manual_axes if p.mesh.axis_type(a) != "explicit"]
        if auto:
            raise _fail(
                ErrorKind.SPEC_TYPE,
                f"in_specs left out, but manual axes {auto} are not Explicit: jax infers in_specs only from the "
                "sharding types of an all-Explicit manual mesh; pass in_specs=(P(...), ...) or make the axes Explicit",
                "in_specs",
            )
    if p.form.in_specs == "single" and p.in_specs:
        p = replace(p, in_specs=(p.in_specs[0],) * len(p.inputs))
    if p.form.out_specs == "single" and p.out_specs:
        p = replace(p, out_specs=(p.out_specs[0],) * len(p.outputs))
    return p


def check_spec_types_and_axes(p: Program, specs: tuple[Spec, ...], which: str) -> None:
    """Steps 1-2: spec objects, then the axes they name."""
    for i, s in enumerate(specs):
        if s.kind == "none":
            # in_specs: a static argument (the docstring: "If None, inputs will be
            # treated as static"); out_specs: an empty pytree, a structure error after
            # tracing (step 6)
            continue
        if s.kind != "P":
            raise _fail(
                ErrorKind.SPEC_TYPE,
                f"{which}[{i}] is {s!r}, which is not a PartitionSpec; write P(...) "
                "(P() for a replicated value)",
                f"{which}[{i}]",
            )
    manual = p.manual_axes
    for i, s in enumerate(specs):
        for a in s.axes():
            if a not in manual:
                where = "is not a mesh axis" if a not in p.mesh.names else "is not manual (not in axis_names)"
                raise _fail(
                    ErrorKind.SPEC_UNKNOWN_AXIS,
                    f"{which}[{i}]={s!r} names {a!r}, which {where}; manual axes are {manual}",
                    which,
                    repr(a),
                )


def _duplicate(s: Spec) -> str | None:
    seen: set[str] = set()
    for a in s.axes():
        if a in seen:
            return a
        seen.add(a)
    return None


def _check_duplicates(specs: tuple[Spec, ...], which: str) -> None:
    """No spec may name a mesh axis twice (DuplicateSpecError from NamedSharding)."""
    for i, s in enumerate(specs):
        a = _duplicate(s)
        if a is not None:
            raise _fail(
                ErrorKind.SPEC_DUPLICATE_AXIS,
                f"{which}[{i}]={s!r} maps mesh axis {a!r} to more than one dimension",
                f"`{a}`",
            )


def check_in_specs(p: Program) -> list[tuple[int, ...]]:
    """Steps 3-5. Returns each argument's per-device shape."""
    if p.form.in_specs == "list":
        raise _fail(
            ErrorKind.IN_SPECS_STRUCTURE,
            "in_specs is a list, but the arguments are a tuple: a list is no pytree prefix of a tuple; "
            "write in_specs=(P(...), ...) or one P for every argument",
            "in_specs",
        )
    if len(p.in_specs) != len(p.inputs):
        raise _fail(
            ErrorKind.IN_SPECS_STRUCTURE,
            f"in_specs has {len(p.in_specs)} entries but the function takes {len(p.inputs)} arguments",
            "in_specs",
        )
    mesh = p.mesh
    for i, (x, s) in enumerate(zip(p.inputs, p.in_specs)):
        if len(s.entries) > len(x.shape):
            raise _fail(
                ErrorKind.IN_SPEC_RANK,
                f"in_specs[{i}]={s!r} has {len(s.entries)} entries but args[{i}] has rank {len(x.shape)}; "
                "shorten the spec or give the argument more dimensions",
                f"args[{i}]",
                f"rank {len(x.shape)}",
            )
    for i, (x, s) in enumerate(zip(p.inputs, p.in_specs)):
        for d, e in enumerate(s.entries):
            if e and x.shape[d] % mesh.group_size(e) != 0:
                raise _fail(
                    ErrorKind.IN_SPEC_DIVISIBILITY,
                    f"args[{i}] dimension {d} has size {x.shape[d]}, which mesh axes {e} "
                    f"(total size {mesh.group_size(e)}) do not divide; pad the argument or change the mesh",
                    f"args[{i}]",
                    f"(of size {x.shape[d]})",
                )
    _check_duplicates(p.in_specs, "in_specs")
    return [
        tuple(n // mesh.group_size(s.entries[d]) if d < len(s.entries) and s.entries[d] else n for d, n in enumerate(x.shape))
        for x, s in zip(p.inputs, p.in_specs)
    ]


def check_out_specs(p: Program, out_types: list[ValueType]) -> None:
    """Step 6."""
    if p.form.out_specs == "list":
        raise _fail(
            ErrorKind.OUT_SPECS_STRUCTURE,
            "out_specs is a list, but the body returns a tuple: a list is no pytree prefix of a tuple; "
            "write out_specs=(P(...), ...) or one P for every output",
            "out_specs",
        )
    if len(p.out_specs) != len(p.outputs) or any(s.kind == "none" for s in p.out_specs):
        raise _fail(
            ErrorKind.OUT_SPECS_STRUCTURE,
            f"out_specs {tuple(p.out_specs)!r} does not match the structure of the {len(p.outputs)} outputs",
            "out_specs",
        )
    for k, (t, s) in enumerate(zip(out_types, p.out_specs)):
        if len(s.entries) > len(t.shape):
            raise _fail(
                ErrorKind.OUT_SPEC_RANK,
                f"out_specs[{k}]={s!r} has {len(s.entries)} entries but output {k} has rank {len(t.shape)}"
                + ("; a rank-0 output varying over the mesh needs a dimension to be concatenated along" if not t.shape else ""),
                f"rank {len(t.shape)}",
                output=k,
            )
    _check_duplicates(p.out_specs, "out_specs")
    if p.check_vma:
        for k, (t, s) in enumerate(zip(out_types, p.out_specs)):
            # (an axis the output is unreduced or reduced over but its out_spec does not
            # say so: jax 0.10.2's replication check names it too, measured)
            ur = (t.unreduced - set(s.unreduced)) | (t.reduced - set(s.reduced))
            missing = sorted(((t.vma or frozenset()) | ur) - set(s.axes()))
            if missing:
                raise _fail(
                    ErrorKind.OUT_SPEC_REPLICATION,
                    f"out_specs[{k}]={s!r} leaves out {missing}, but output {k} varies along "
                    f"{'them' if len(missing) > 1 else 'it'} (vma={sorted(t.vma or ())}); name "
                    f"{'them' if len(missing) > 1 else 'it'} in the out_spec, reduce over "
                    f"{'them' if len(missing) > 1 else 'it'} (psum) or pass check_vma=False",
                    *missing,
                    output=k,
                )
