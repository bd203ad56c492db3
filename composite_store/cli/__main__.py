"""``python -m composite_store.cli``: the same as the ``composite-store`` command."""

import sys

from composite_store.cli.main import main

sys.exit(main())
