## tests/: shared test infrastructure and the tests of the robotrain program as a whole.
EXTRA_DIST += tests/testing.h tests/tap.sh tests/valgrind.supp
TESTS += tests/cli-basics.sh
EXTRA_DIST += tests/cli-basics.sh
