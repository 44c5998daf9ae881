## src/dist: sources, tests and pages of this area (see the top-level Makefile.am).
