## src/core: sources, tests and pages of this area (see the top-level Makefile.am).
robotrain_SOURCES += src/cli/cmd-config.c
