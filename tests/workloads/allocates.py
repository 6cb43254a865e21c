"""Allocates a given number of MiB (argv[1]) and touches every page."""

import sys

size = int(sys.argv[1]) * 1024 * 1024
block = bytearray(size)
for index in range(0, size, 4096):
    block[index] = 1
