"""``python -m strided``: the command line, which lives in :mod:`strided._cli`.

Kept thin so that importing ``strided`` never loads the command line: everything, exit codes
included, is decided by :func:`strided._cli.main`.
"""

from __future__ import annotations

if __name__ == "__main__":
    from strided._cli import main

    raise SystemExit(main())
