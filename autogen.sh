#!/bin/sh
# Generates configure and the Makefile.in files from a git checkout (tarballs ship them).
set -e
cd "$(dirname "$0")"
autoreconf --install --force --warnings=all
