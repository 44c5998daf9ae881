## src/train: the training loop, checkpoints, schedules, metrics (see the top-level Makefile.am).
