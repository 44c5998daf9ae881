## src/net/wandb: Weights & Biases client (see the top-level Makefile.am).
