"""Small builders for hand-written programs in tests, and the browser the page tests use."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace

import pytest

from programs.model import Input, Mesh, Op, Program, Spec


def P(*entries: object) -> Spec:
    out = []
    for e in entries:
        if e is None:
            out.append(None)
        elif isinstance(e, str):
            out.append((e,))
        else:
            out.append(tuple(e))  # type: ignore[arg-type]
    return Spec(tuple(out))


def prog(
    mesh: Mesh,
    inputs: list[Input],
    in_specs: list[Spec],
    body: list[Op],
    outputs: list[int],
    out_specs: list[Spec],
    check_vma: bool = True,
) -> Program:
    return Program(mesh, tuple(inputs), tuple(in_specs), tuple(body), tuple(outputs), tuple(out_specs), None, check_vma)


def op(kind: str, *operands: int, **params: object) -> Op:
    return Op.make(kind, tuple(operands), **params)  # type: ignore[arg-type]


def iota(*shape: int, dtype: str = "int32") -> Input:
    return Input(tuple(shape), dtype, "iota")


def psum_program(n: int, dtype: str = "float32") -> Program:
    """A psum over x of one argument of 2n elements."""
    return Program(Mesh(("x",), (2,)), (Input((2 * n,), dtype, "iota"),), (Spec((("x",),)),),
                   (Op.make("psum", (0,), axes=("x",)),), (1,), (Spec((None,)),))


def two_outputs() -> Program:
    """psum (output 0) and neg (output 1) of one argument."""
    return Program(Mesh(("x",), (2,)), (Input((4,), "float32", "iota"),), (Spec((("x",),)),),
                   (Op.make("psum", (0,), axes=("x",)), Op.make("neg", (0,))), (1, 2), (Spec((None,)), Spec((("x",),))))


def replication_at_output_1() -> Program:
    """`two_outputs` with an out_spec dropping x for the neg, which varies along x: the
    oracle's error is at output 1 (out_spec replication)."""
    p = two_outputs()
    return Program(p.mesh, p.inputs, p.in_specs, p.body, p.outputs, (Spec((None,)), Spec((None,))), defect="out_spec_drops_varying_axis")


def chromium(what: str) -> str:
    """The headless browser's path; without one, a skip (a failure under CI, which
    installs it) that says how to install it and what the test would `what`."""
    exe = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
    if exe is None:
        why = f"chromium is missing: install it (apt-get install -y chromium) to {what}"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    return exe


def with_unrelated_psum(p: Program) -> Program:
    """`p` plus an argument that only an added psum reads (over every manual axis, its own
    output with out_specs P()): nothing of the known bug reaches it."""
    manual = tuple(a for a in p.mesh.names if a in p.manual_axes)
    n = p.mesh.group_size(manual)
    k = len(p.inputs)
    shift = 1  # values are renumbered: arguments first
    body = tuple(replace(o, operands=tuple(v + shift if v >= k else v for v in o.operands)) for o in p.body)
    outputs = tuple(v + shift if v >= k else v for v in p.outputs)
    base = len(p.inputs) + 1 + len(body)
    extra = (op("const", shape=(1,), dtype="int32", value=1), op("add", k, base), op("psum", base + 1, axes=manual))
    # (around jax.sharding.auto_axes, the added output is replicated outside too: out_sharding P())
    # (explicit_axes: its in_sharding for the added argument, the in_spec's Explicit axes inside)
    wrap_specs = {"auto_axes": p.wrap_specs + (P(),),
                  "explicit_axes": p.wrap_specs + (P(tuple(a for a in manual if p.mesh.axis_type(a) == "explicit") or None),)}.get(
                      str(p.wrap), p.wrap_specs)
    return replace(p, inputs=p.inputs + (Input((n,), "int32", "iota"),), in_specs=p.in_specs + (P(manual),),
                   body=body + extra, outputs=outputs + (base + 2,), out_specs=p.out_specs + (P(),), wrap_specs=wrap_specs)
