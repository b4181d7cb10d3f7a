"""Post-deploy check of a deployed stack: `make e2e STACK=<name>` (needs AWS credentials).

The normal test run collects these tests and skips them; `python -m tests.e2e` (what the
Makefile runs) checks what it needs first and runs them against the named stack.
"""
