"""composite-store on libSQL.

- URL: ``libsql:///agent.db`` / ``libsql:////abs/agent.db`` (embedded file, slashes as in
  ``sqlite:///``) or ``libsql://HOST?authToken=TOKEN``
  (a remote sqld / Turso server; the token may also be given as ``auth_token=``).
- Extra: ``pip install "composite-store[libsql]"``.
- Driver: PyPI ``libsql``, the libSQL engine itself (SQLite 3.45), through a small DB-API
  face (``composite_store_libsql.dbapi``) and the SQLAlchemy dialect ``sqlite+libsql``.

Files are laid out as Mastra's ``@mastra/libsql`` lays them out (see docs/schema.md), so a
Mastra application can share them. The driver is synchronous: each operation hops once to the
store's worker thread, never once per statement.
"""

from composite_store_libsql.dialect import LibsqlDialect
from composite_store_libsql.store import (
    LibsqlDatasets,
    LibsqlExperiments,
    LibsqlMemory,
    LibsqlObservability,
    LibsqlScores,
    LibsqlStore,
    LibsqlWorkflowDefinitions,
    LibsqlWorkflows,
)

__all__ = [
    "LibsqlDatasets",
    "LibsqlDialect",
    "LibsqlExperiments",
    "LibsqlMemory",
    "LibsqlObservability",
    "LibsqlScores",
    "LibsqlStore",
    "LibsqlWorkflowDefinitions",
    "LibsqlWorkflows",
]
