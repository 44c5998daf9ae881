## src/dist/launcher: robotrain launch and the config questionnaire (see the top-level Makefile.am).
