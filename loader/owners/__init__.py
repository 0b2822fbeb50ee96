"""Who owns the memory: each object's owner (its package, file, category...), worked out without rules.

- :mod:`.attribution`: the rule (program structure first, then the dominator tree), ``owners_of``;
- :mod:`.sources`: what each runtime's program structure says; :mod:`.dart` for Dart's profiles;
- :mod:`.kernels`: the compiled loops;
- :mod:`.table`: memory by owner as a table, what a load stores and the questions answer.

The package itself imports nothing: the questions read stored tables (:mod:`.table`) without numba,
which the attribution's kernels need, so each module is imported by its own name.
"""
