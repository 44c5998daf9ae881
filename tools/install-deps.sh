#!/bin/sh
# Installs every Debian 12 package that robotrain's build, tests and benchmarks need.
# Run as root on a fresh machine:  sh tools/install-deps.sh
# The README and .ci/run both call this script, so the list lives here and nowhere else.
# CUDA is not among them: it comes with NVIDIA's toolkit (nvcc, cuDNN, NCCL) where a
# machine has one, and configure turns the CUDA modules off where it is absent.
set -eu
export DEBIAN_FRONTEND=noninteractive

packages="
  build-essential autoconf automake libtool libltdl-dev pkg-config perl
  libglib2.0-dev libjson-glib-dev libcurl4-openssl-dev
  libopenblas-dev libdnnl-dev libgloo-dev
  libsnappy-dev libzstd-dev zlib1g-dev libpng-dev
  libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libdav1d-dev ffmpeg
  valgrind git ca-certificates python3
  clang libclang-rt-14-dev
"

apt-get update
# shellcheck disable=SC2086
apt-get install -y --no-install-recommends $packages
