"""`python -m loom.cli`: the same as the `loom` script."""

from loom.cli import main

main()
