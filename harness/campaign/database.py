"""The example database a run shares with other runs (other shards, other machines):
Hypothesis' own classes, never a store of ours.

`--database` names it:
- a directory (on shared storage: NFS, a mounted bucket): `DirectoryBasedExampleDatabase`;
- `redis://HOST:PORT[/DB]`: `RedisExampleDatabase` (`pip install 'hypothesis[redis]'`).
Without `--database`, a `--corpus DIR` keeps its database in `DIR/.hypothesis/` as before.

What a run puts there: each new bucket's program, as the choice sequence Hypothesis drew
it from (shrunk first when minimization is on); what a run takes from there: every saved
example, replayed (read-only) before it generates anything, in every shard. So a failure
one shard finds is checked first by every shard's next run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

from programs.errors import UsageError


def open_database(spec: str) -> ExampleDatabase:
    """The database `spec` names (a UsageError naming the problem and the fix otherwise;
    a Redis server is pinged here, before the run, so a wrong address is one line)."""
    if spec.startswith(("redis://", "rediss://", "unix://")):
        try:
            import redis
            from hypothesis.extra.redis import RedisExampleDatabase
        except ImportError:
            raise UsageError(f"--database {spec}: the redis client is not installed; pip install 'hypothesis[redis]'") from None
        try:
            client = redis.Redis.from_url(spec)
            client.ping()
        except (redis.exceptions.RedisError, ValueError) as e:
            raise UsageError(f"--database {spec}: no Redis server answers there ({e}); start one (redis-server --port N) "
                             "or fix the address") from None
        return RedisExampleDatabase(client)
    if "://" in spec:
        raise UsageError(f"--database {spec}: unknown scheme; give a directory or redis://HOST:PORT[/DB]")
    d = Path(spec)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"--database {spec}: cannot make that directory ({e.strerror}); pass a writable one") from None
    return DirectoryBasedExampleDatabase(str(d))


def run_database(database: str | None, corpus: Path | None) -> Any:
    """The run's example database: `--database`, else the corpus's, else None."""
    if database is not None:
        return open_database(database)
    if corpus is not None:
        return DirectoryBasedExampleDatabase(str(corpus / ".hypothesis"))
    return None
