"""`python -m app.cli ...` runs the `trainingrun` command."""

from app.cli.main import main

raise SystemExit(main())
