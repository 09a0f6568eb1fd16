from __future__ import annotations

from ctxward.cli import main

raise SystemExit(main())
