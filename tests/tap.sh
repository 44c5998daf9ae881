# tests/tap.sh: TAP helpers for shell tests. Source it, call plan N, then the checks.
#   ok_run "name" cmd...            passes when cmd exits 0
#   fail_run STATUS "name" cmd...   passes when cmd exits STATUS (e.g. 2 for a usage error)
#   contains "name" FILE TEXT       passes when FILE contains TEXT (fixed string)
# Every command's output goes to "$T/out" and "$T/err" for the next checks; T is a private
# temporary folder removed at exit.
T=$(mktemp -d "${TMPDIR:-/tmp}/robotrain-tap.XXXXXX")
trap 'rm -rf "$T"' EXIT
tap_n=0
tap_failed=0
plan() { echo "1..$1"; }
skip_all() { echo "1..0 # SKIP $*"; exit 0; }
tap_result() {
  tap_n=$((tap_n + 1))
  if [ "$1" -eq 0 ]; then echo "ok $tap_n - $2"; else echo "not ok $tap_n - $2"; tap_failed=1
    sed 's/^/#   out: /' "$T/out" 2>/dev/null | head -20; sed 's/^/#   err: /' "$T/err" 2>/dev/null | head -20; fi
}
ok_run() { name=$1; shift; "$@" >"$T/out" 2>"$T/err"; tap_result $? "$name"; }
fail_run() { want=$1; name=$2; shift 2; "$@" >"$T/out" 2>"$T/err"; rc=$?
  [ "$rc" -eq "$want" ]; r=$?; [ $r -eq 0 ] || echo "# exit status $rc, expected $want"; tap_result $r "$name"; }
contains() { grep -F -q -- "$3" "$2"; r=$?; [ $r -eq 0 ] || echo "# '$2' lacks: $3"; tap_result $r "$1"; }
