#!/bin/sh
# Runs one test. Scripts run as they are; C test programs run under valgrind memcheck when
# configure was given --enable-valgrind (VALGRIND is then set by AM_TESTS_ENVIRONMENT).
# A valgrind error turns into a test failure (exit 1); exit 77 (skip) passes through.
test_prog=$1
shift
case "$test_prog" in
  *.sh) exec "$test_prog" "$@" ;;
esac
# The ACT numeric tests (whole networks, forward and backward, many configurations) take tens of
# minutes under memcheck; they run natively there, and the ASan+UBSan run covers their memory.
case "$test_prog" in
  *test-act|*test-act-check) ROBOTRAIN_NO_VALGRIND=1 ;;
esac
if [ -n "$VALGRIND" ] && [ -z "$ROBOTRAIN_NO_VALGRIND" ]; then
  exec "${RT_LIBTOOL:-./libtool}" --mode=execute "$VALGRIND" --quiet --error-exitcode=1 --leak-check=full \
    --errors-for-leak-kinds=definite --suppressions="$(dirname "$0")/valgrind.supp" \
    "$test_prog" "$@"
fi
exec "$test_prog" "$@"
