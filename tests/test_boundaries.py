"""House rules that a machine can check: room boundaries and one op set everywhere."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("room", ["programs", "strategies", "oracles"])
def test_room_never_imports_jax(room: str) -> None:
    code = (
        f"import sys, {room}, importlib, pkgutil\n"
        f"for m in pkgutil.walk_packages({room}.__path__, '{room}.'):\n"
        "    importlib.import_module(m.name)\n"
        "bad = sorted(k for k in sys.modules if k == 'jax' or k.startswith('jax.') or k == 'jaxlib')\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, f"{room} imported {r.stdout.strip()} {r.stderr[-500:]}"


def test_oracle_never_imports_hypothesis() -> None:
    code = "import sys, oracles, programs; sys.exit(1 if 'hypothesis' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_worker_needs_no_hypothesis() -> None:
    # a worker may run in another environment (qualify --python), which has jax but maybe
    # not hypothesis: nothing the worker imports may need it
    code = "import sys, harness.run.worker, harness.run.zygote; sys.exit(1 if 'hypothesis' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_strategies_ask_the_oracle_without_jax() -> None:
    # strategies/ may import oracles/ (the strategy asks the oracle's op rules), which
    # never imports jax or hypothesis; the op sets agree: tests/test_op_tables.py
    code = "import sys, strategies.body; sys.exit(0 if 'oracles.ops' in sys.modules and 'jax' not in sys.modules else 1)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_public_exports() -> None:
    import oracles
    import programs
    import strategies

    for mod in (programs, strategies, oracles):
        for name in mod.__all__:
            assert hasattr(mod, name), f"{mod.__name__}.__all__ names missing {name}"
