"""Throwaway namespaces for tests and ``composite-store check``: a new libSQL file.

Embedded libSQL files are provisioned exactly as SQLite files are (a new file in a new
temporary directory; the URL's own file is never opened), so this module re-exports the core
file provisioner. Remote ``libsql://HOST`` URLs cannot be provisioned from here.
"""

from __future__ import annotations

from composite_store.admin.provision import FileProvisioner

__all__ = ["create_namespace", "drop_namespace", "store_url"]

_files = FileProvisioner()

create_namespace = _files.create_namespace
drop_namespace = _files.drop_namespace
store_url = _files.store_url
