"""Reading a program from Python in the emit form (`programs/source.py`, ast only):
every emitted program parses back to itself, a hand-written file reads as expected, and
anything unreadable is bad input naming its line and column."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from helpers import P, op, prog
from hypothesis import given, settings
from hypothesis import strategies as st

from programs.emit import to_python
from programs.errors import SourceError
from programs.model import Input, Mesh, Op, Program
from programs.ops import WRAP_SOURCE, WRAPS
from programs.source import canonical, from_source
from strategies import programs


@settings(max_examples=300)
@given(programs(invalid=0.3))
def test_an_emitted_program_parses_back_to_the_same_program(p: Program) -> None:
    assert canonical(from_source(to_python(p))) == canonical(p)


@given(programs(), st.sampled_from(["jit", "eager", "vmap", "grad", "lowering"]))
def test_every_reproducer_mode_parses_back(p: Program, mode: str) -> None:
    assert canonical(from_source(to_python(p, mode=mode))) == canonical(p)


@pytest.mark.parametrize("wrap", WRAPS)
def test_every_wrapper_parses_back_with_its_operands(wrap: str) -> None:
    """Each wrapper's WRAP_SOURCE form reads back as the op with wrap=...: a collective of
    the carry, and a binary op whose second operand the wrapper closes over."""
    p = prog(Mesh(("x", "y"), (2, 2)), [Input((4, 2), "float32", "small", 1)], [P("x")],
             [op("psum", 0, axes=("y",), wrap=wrap), op("add", 1, 0, wrap=wrap)], [2], [P("x")])
    text = to_python(p)
    assert WRAP_SOURCE[wrap].split("(")[0] in text
    assert from_source(text).body == p.body


def test_a_wrapper_whose_copies_differ_is_unreadable() -> None:
    text = ("mesh = jax.make_mesh((2,), ('x',))\na0 = jax.ShapeDtypeStruct((4,), jnp.float32)\nin_specs = (P('x'),)\n"
            "out_specs = (P('x'),)\ndef body(a0):\n"
            "  v0 = jax.lax.switch(1, [lambda c: -c, lambda c: -c, lambda c: jax.lax.psum(c, 'x')], a0)\n  return v0,\n")
    with pytest.raises(SourceError, match="every copy of the op"):
        from_source(text)


USER = """\
import jax
from jax.sharding import PartitionSpec as P

mesh = jax.make_mesh((2, 2), ('x', 'y'))
x = jax.ShapeDtypeStruct((4, 2), jnp.float32)
in_specs = (P('x'),)
out_specs = P()
check_vma = True

def body(x):
  s = jax.lax.psum(x * x, ('x', 'y'))
  return s
"""


def test_a_hand_written_file_reads_as_its_ops() -> None:
    p = from_source(USER)
    assert p.mesh == Mesh(("x", "y"), (2, 2))
    assert p.inputs == (Input((4, 2), "float32", "iota"),)
    # the nested expression x * x becomes its own op, read by the psum
    assert p.body == (Op.make("mul", (0, 0)), Op.make("psum", (1,), axes=("x", "y")))
    assert p.outputs == (2,) and len(p.out_specs) == 1 and p.check_vma


@pytest.mark.parametrize(
    "text, line, col, phrase",
    [
        ("mesh = jax.make_mesh((2,), ('x',))\na0 = jax.ShapeDtypeStruct((4,), jnp.int32)\nin_specs = (P('x'),)\n"
         "out_specs = (P('x'),)\ndef body(a0):\n  v0 = jax.lax.psum(foo(a0), 'x')\n  return v0,\n", 6, 21, "'foo' is not an op"),
        ("mesh = jax.make_mesh((2,), ('x',))\na0 = jax.ShapeDtypeStruct((4,), jnp.int32)\nin_specs = (P('x'),)\n"
         "out_specs = (P('x'),)\ndef body(a0):\n  v0 = -b\n  return v0,\n", 6, 9, "'b' is not defined"),
        ("mesh = jax.make_mesh((2,), ('x',))\na0 = jax.ShapeDtypeStruct((4,), jnp.int4)\n", 2, 33, "dtype"),
        ("mesh = jax.make_mesh((2,), ('x',))\nprint(mesh)\n", 2, 1, "expected `name = ...`"),
        ("mesh = jax.make_mesh((2,), ('x',))\ndef body(a0):\n  return a0,\n", 2, 1, "argument 'a0' of body has no value"),
        ("mesh = (\n", 1, 8, "never closed"),
    ],
)
def test_unreadable_source_names_line_and_column(text: str, line: int, col: int, phrase: str) -> None:
    with pytest.raises(SourceError) as e:
        from_source(text)
    assert str(e.value).startswith(f"line {line}, column {col}: "), str(e.value)
    assert phrase in str(e.value)


def test_source_is_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = f"open({str(marker)!r}, 'w')\n" + USER
    with pytest.raises(SourceError):
        from_source(text)
    assert not marker.exists()
    assert isinstance(ast.parse(USER), ast.Module)


def test_explain_reads_a_python_file_and_rejects_a_bad_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli import main

    good = tmp_path / "prog.py"
    good.write_text(USER)
    assert main(["explain", "--no-jax", str(good)]) == 0
    assert "collective_vma" in capsys.readouterr().out
    bad = tmp_path / "bad.py"
    bad.write_text(USER.replace("jax.lax.psum(x * x", "jax.lax.psum(x @ x"))
    assert main(["explain", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{bad}: line 11, column" in err[0]
