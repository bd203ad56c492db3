"""Operating tools as plain functions over the domain contracts: copy domains between stores
(``copy``), migrate a schema (``migrate``), inspect a store (``inspect``), and throwaway
namespaces for tests and ``check`` (``provision``). The command line (``composite_store.cli``)
calls these; applications may too.
"""
