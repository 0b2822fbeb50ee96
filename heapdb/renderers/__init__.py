"""Answers made readable, the stage between the questions and the front ends: the CLI and the
service both import these, and nothing here imports either.

- :mod:`~heapdb.renderers.text`: every answer as text for a terminal;
- :mod:`~heapdb.renderers.drawing`: graph answers as GraphViz dot and SVG;
- :mod:`~heapdb.renderers.flamegraph`: retainer paths as a flame graph (SVG);
- :mod:`~heapdb.renderers.ci_report`: a gate report as text, JUnit XML and Markdown;
- :mod:`~heapdb.renderers.treemap`: a dominator treemap laid out as rectangles, for the pages;
- :mod:`~heapdb.renderers.charts`: small inline SVG charts, for the pages.
"""
