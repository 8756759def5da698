"""python -m ulpgym [--version | info]: the package's version, or its library and dependencies."""
from ._cli import console_main

console_main()
