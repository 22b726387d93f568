"""Run many emitted reproducer scripts in one Python process (one jax start-up for all):
`python tests/repro_runner.py SCRIPT...` prints one JSON object {script: [exit code,
stdout]}. Each script runs as `__main__` exactly as `python SCRIPT` would run it, minus
its crash-safe child process (SHARDFUZZ_REPRO_CHILD=1): for scripts expected to pass,
where a crash fails the test anyway. What a script sets for the process (the GSPMD flag,
the global mesh, x64, the permute-order flag) is reset after it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import runpy
import sys


def main(paths: list[str]) -> int:
    os.environ["SHARDFUZZ_REPRO_CHILD"] = "1"
    results: dict[str, list[object]] = {}
    for path in paths:
        buf = io.StringIO()
        code: object = 0
        with contextlib.redirect_stdout(buf):
            try:
                runpy.run_path(path, run_name="__main__")
            except SystemExit as e:
                code = e.code
        import jax

        # what a script may set for the whole process, reset for the next one: the GSPMD
        # flag, the global mesh (jax.set_mesh(mesh) as a setter), x64, the permute-order flag
        jax.config.update("jax_use_shardy_partitioner", True)
        if hasattr(jax, "set_mesh"):
            jax.set_mesh(None)
        jax.config.update("jax_enable_x64", False)
        if hasattr(jax.config, "jax_raise_on_ppermute_sort_diff"):
            jax.config.update("jax_raise_on_ppermute_sort_diff", True)
        results[path] = [code, buf.getvalue()]
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
