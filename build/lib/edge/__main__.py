"""`python -m edge` and the Nuitka entry point: hands straight to the CLI."""

from edge.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
