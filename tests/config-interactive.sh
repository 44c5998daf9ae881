#!/bin/sh
. "$ROBOTRAIN_TEST_SRCDIR/tap.sh"
skip_all "not yet"
