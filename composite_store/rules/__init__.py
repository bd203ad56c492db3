"""The rules every backend applies, as I/O-free functions: pagination (``paging``), merges
(``merge``), dataset item history (``item_history``) and item checks against a dataset's JSON
Schemas (``item_schemas``), workflow step and state updates (``workflow_state``), and the review
summary of experiment results (``review``), JSON equality of filter values
(``json_match``). Each is unit-tested without a backend.
"""
