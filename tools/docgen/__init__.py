"""Generators of the documentation pages that are written from the code (each one a module
run as ``python -m tools.docgen.<name> > docs/<page>.md``; a test regenerates each page and
fails when the committed file differs)."""
