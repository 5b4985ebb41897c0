"""The ``trainop`` command line: parse, call the layers below, print."""
