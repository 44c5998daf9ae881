## data/: the bundled example dataset and its generator (see the top-level Makefile.am).
