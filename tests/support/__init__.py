"""Helpers of the repository's tests, imported as ``tests.support.<name>``: which backends ran
(``backends``), how a server is found or started (``servers``), shared data (``copy_data``) and
the Oracle statement recorder (``oracle_recording``)."""
