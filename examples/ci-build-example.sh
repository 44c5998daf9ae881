#!/bin/sh
# examples/ci-build-example.sh PREFIX: builds examples/hello-policy against the robotrain
# installed in PREFIX (with pkg-config, as a third party would), installs it into a private
# staging folder, and checks that PREFIX/bin/robotrain lists it as loaded and shows its options.
# Exits non-zero when any step fails. .ci/run calls it after `make install`.
set -eu
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "usage: $0 PREFIX (the --prefix of an installed robotrain)" >&2
  exit 2
fi
prefix=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
robotrain=$prefix/bin/robotrain
fail() { echo "$0: $*" >&2; exit 1; }
[ -x "$robotrain" ] || fail "$robotrain does not exist: run make install with --prefix=$prefix first"

PKG_CONFIG_PATH=$prefix/lib/pkgconfig:$prefix/lib64/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export PKG_CONFIG_PATH
pkg-config --exists robotrain || fail "no robotrain.pc in $prefix/lib/pkgconfig"
plugindir=$(pkg-config --variable=plugindir robotrain)
[ -n "$plugindir" ] || fail "robotrain.pc has no plugindir variable"

work=$(mktemp -d "${TMPDIR:-/tmp}/robotrain-example.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
# run LOG cmd...: runs cmd with its output in $work/LOG, printed when it fails.
run() { log=$work/$1; shift; "$@" >"$log" 2>&1 || { cat "$log" >&2; fail "failed: $*"; }; }

# The source folder may be read-only (a tarball, distcheck): build from a copy.
cp -R "$here/hello-policy" "$work/src"
chmod -R u+w "$work/src"
(cd "$work/src" && run autoreconf.log autoreconf --install --force)
mkdir "$work/build"
cd "$work/build"
run configure.log "$work/src/configure" --prefix="$prefix"
grep -F -q "installed in $plugindir" "$work/configure.log" || fail "configure did not take plugindir from robotrain.pc"
run make.log make
run install.log make install DESTDIR="$work/dest"
staged=$work/dest$plugindir
[ -f "$staged/policy-hello.la" ] || fail "make install did not put policy-hello.la in $staged"

"$robotrain" plugins --plugin_path="$staged" >"$work/list" 2>&1 || { cat "$work/list"; fail "robotrain plugins failed"; }
cat "$work/list"
grep -E -q '^policy +hello +0\.1\.0 +[0-9]+\.[0-9]+ +loaded +Example policy built out of tree$' "$work/list" ||
  fail "robotrain plugins does not list the example as loaded"
grep -F -q "$staged/policy-hello.la" "$work/list" || fail "the example is not loaded from $staged"
"$robotrain" plugins show policy-hello --plugin_path="$staged" >"$work/show" 2>&1 || { cat "$work/show"; fail "robotrain plugins show failed"; }
cat "$work/show"
grep -E -q '^  --policy\.hidden_dim=INT +Width of the hidden layer\.' "$work/show" &&
  grep -F -q 'from 1 to 65536. Default: 128.' "$work/show" ||
  fail "robotrain plugins show does not print the example's options"
echo "$0: the out-of-tree example builds against $prefix and loads"
