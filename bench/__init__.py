"""Benchmarks (issue 7): each module measures one thing against a floor and returns table rows.

``python -m bench.run`` runs every module listed in ``bench.run.BENCHMARKS`` and prints one markdown
table. Benchmarks print numbers; no test asserts a wall-clock time (DESIGN.md, "Testing").
"""
