"""Mutation testing for awa: small AST and SQL mutators and a fork-server runner.

``python tools/mutate.py`` is the entry point; docs/testing.md says how to read its report.
"""
