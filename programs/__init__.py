"""The shardfuzz program model (no jax, no hypothesis)."""

from programs.emit import to_python
from programs.errors import ProgramFormatError
from programs.model import DTYPES, Input, Mesh, Op, Program, Spec
from programs.ops import COLLECTIVES, LOCAL_OPS, SYNTAX
from programs.serialize import SCHEMA_VERSION, from_json, to_json

__all__ = [
    "COLLECTIVES",
    "DTYPES",
    "LOCAL_OPS",
    "SCHEMA_VERSION",
    "SYNTAX",
    "Input",
    "Mesh",
    "Op",
    "Program",
    "ProgramFormatError",
    "Spec",
    "from_json",
    "to_json",
    "to_python",
]
