"""Small builders for hand-written programs in tests, and the browser the page tests use."""

from __future__ import annotations

import os
import shutil

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
