#!/usr/bin/python3
"""Runs the adapter named by argv[1] as a careless one would be: it logs its
open request — the run's password in it — to stderr (client-N.log, in the
store), and, for the test only, writes it to the file $LT_SPY outside the
store, so the test knows what to look for."""
import os
import runpy
import sys

first = sys.stdin.readline()
with open(os.environ["LT_SPY"], "a") as f:
    f.write(first)
sys.stderr.write("open request: " + first)
sys.stderr.flush()


class Chained:
    """stdin, its first line given back."""

    def __init__(self, first, rest):
        self.first, self.rest = first, rest

    def __iter__(self):
        yield self.first
        yield from self.rest


sys.stdin = Chained(first, sys.stdin)
runpy.run_path(sys.argv[1], run_name="__main__")
