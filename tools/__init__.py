"""The project's maintenance tools, run from the project root and not installed with
``hindsight``: the documentation generators (``tools.docgen``) and the structure checks."""
