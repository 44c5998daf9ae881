#!/bin/sh
# robotrain plugins: the listing, `show`, the search order (flag, environment, XDG folder),
# shadowing, and the errors, against the test modules of tests/plugins (see its README).
. "$ROBOTRAIN_TEST_SRCDIR/tap.sh"
[ -n "$ROBOTRAIN_TEST_PLUGIN_PATH" ] || skip_all "ROBOTRAIN_TEST_PLUGIN_PATH is not set (run it with make check)"
P=$(cd "$ROBOTRAIN_TEST_PLUGIN_PATH" && pwd)

# matches "name" FILE ERE: passes when a line of FILE matches the extended regular expression.
matches() { grep -E -q -- "$3" "$2"; r=$?; [ $r -eq 0 ] || echo "# '$2' has no line matching: $3"; tap_result $r "$1"; }
# block "name" FILE TEXT: passes when FILE contains TEXT, which may span several lines.
block() { content=$(cat "$2"); case $content in *"$3"*) r=0 ;; *) r=1; echo "# '$2' lacks the lines: $3" ;; esac
  tap_result $r "$1"; }
# lacks "name" FILE TEXT: passes when FILE does not contain TEXT.
lacks() { ! grep -F -q -- "$3" "$2"; r=$?; [ $r -eq 0 ] || echo "# '$2' contains: $3"; tap_result $r "$1"; }

# A private user folder, whatever the caller's environment.
XDG_DATA_HOME=$T/data; export XDG_DATA_HOME
ROBOTRAIN_PLUGIN_PATH=; export ROBOTRAIN_PLUGIN_PATH

# The built-in plugin folder comes last in every search. When a robotrain is installed there,
# its modules join every listing, and the checks of whole counts are skipped.
mkdir "$T/empty"
"$ROBOTRAIN" plugins --plugin_path="$T/empty" >"$T/out" 2>&1
if grep -F -q "no modules found" "$T/out"; then installed=no; else installed=yes; fi
# counts "name" FILE TEXT: contains, or a skip when modules are installed in the built-in folder.
counts() { if [ $installed = yes ]; then tap_n=$((tap_n + 1)); echo "ok $tap_n # SKIP modules are installed in the built-in folder"
  else contains "$@"; fi; }

plan 67

# ---- the listing
ok_run "plugins lists the test modules" "$ROBOTRAIN" plugins --plugin_path="$P"
matches "a loaded module: kind, name, version, ABI, status, description" "$T/out" \
  '^policy +good +1\.2\.3 +1\.0 +loaded +Test policy with one option of every type$'
contains "each module's file is listed" "$T/out" "         $P/policy-good.la"
matches "a module for another ABI is refused, with its ABI" "$T/out" '^policy +abi-major +- +2\.0 +refused$'
contains "... and the reason" "$T/out" \
  "refused: built for plugin ABI 2.0, but this robotrain (0.1.0) has plugin ABI 1.0 and loads only modules built for ABI 1.0; rebuild the module against this robotrain"
contains "a module whose dependency is missing: the library is named" "$T/out" \
  "refused: cannot be loaded: librtmissing.so: cannot open shared object file: No such file or directory; check its dependencies with ldd(1): ldd -r $P/.libs/policy-missing-dep.so"
contains "a module with an unresolved symbol: the symbol is named" "$T/out" \
  "undefined symbol: rt_test_absent_function"
contains "a module without entry point" "$T/out" \
  "refused: not a robotrain module: it exports neither rt_plugin_nosym_get_desc nor rt_plugin_get_desc"
contains "a descriptor without vtable" "$T/out" "refused: its descriptor has no vtable"
matches "the generic entry point is accepted" "$T/out" '^policy +fallback +0\.0\.1 +1\.0 +loaded'
matches "a backend module" "$T/out" '^backend +good +0\.0\.1 +1\.0 +loaded'
counts "the summary counts loaded and refused modules" "$T/out" "3 loaded, 7 refused (plugin ABI 1.0)"
lacks "a helper library is not a module" "$T/out" "rtmissing "
ok_run "'list' is the default action" "$ROBOTRAIN" plugins list --plugin_path "$P"
counts "... and --plugin_path takes its value as the next argument too" "$T/out" "3 loaded, 7 refused"

# ---- shadowing: the first folder wins
ok_run "two folders with a module of the same name" "$ROBOTRAIN" plugins --plugin_path="$P/shadow:$P"
matches "the earlier folder's module is used" "$T/out" '^policy +good +2\.0\.0-shadow +1\.0 +loaded +The copy in the shadow folder$'
lacks "without --verbose, the shadowed one is not shown" "$T/out" "shadowed"
ok_run "--verbose" "$ROBOTRAIN" plugins --verbose --plugin_path="$P/shadow:$P"
block "--verbose prints the search path" "$T/out" "search path:
  $P/shadow
  $P
  $T/data/robotrain/plugins  (not a folder)"
matches "--verbose lists the shadowed module" "$T/out" '^policy +good +- +- +shadowed$'
contains "... naming the module that shadows it" "$T/out" "shadowed by $P/shadow/policy-good.la"
counts "... and counts it" "$T/out" "3 loaded, 7 refused, 1 shadowed"

# ---- search order: --plugin_path, then ROBOTRAIN_PLUGIN_PATH, then the XDG user folder
mkdir -p "$T/data/robotrain/plugins"
cp "$P/.libs/policy-good.so" "$T/data/robotrain/plugins/"
ROBOTRAIN_PLUGIN_PATH=$P/shadow ok_run "flag and environment" "$ROBOTRAIN" plugins show policy-good --plugin_path="$P"
contains "the flag's folder comes before the environment's" "$T/out" "  version      1.2.3"
ROBOTRAIN_PLUGIN_PATH=$P/shadow ok_run "environment and user folder" "$ROBOTRAIN" plugins show policy-good
contains "the environment's folder comes before the user folder" "$T/out" "  version      2.0.0-shadow"
ok_run "the user folder alone" "$ROBOTRAIN" plugins show policy-good
contains "a plain .so in \$XDG_DATA_HOME/robotrain/plugins is found" "$T/out" \
  "  file         $T/data/robotrain/plugins/policy-good.so"
contains "... and loaded" "$T/out" "  version      1.2.3"
rm -rf "$T/data/robotrain"

# ---- show
ok_run "show a module by its file name" "$ROBOTRAIN" plugins show policy-good --plugin_path="$P"
block "show prints the descriptor" "$T/out" "policy-good
  name         good
  kind         policy
  version      1.2.3
  license      Apache-2.0
  description  Test policy with one option of every type
  plugin ABI   1.0 (this robotrain loads 1.0)"
contains "... and the module's file" "$T/out" "  file         $P/policy-good.la"
contains "a policy's options are --policy.KEY flags" "$T/out" "options (give them as --policy.KEY=VALUE):"
matches "the options table has a header" "$T/out" '^  KEY +TYPE +DEFAULT +ALLOWED +HELP$'
matches "a bool option" "$T/out" '^  use_vae +bool +true +true\|false +Train with the variational objective\.$'
matches "an int option with its range" "$T/out" '^  chunk_size +int +100 +\[1, 1000\] +Number of actions predicted per chunk\.$'
matches "a float option with its range" "$T/out" '^  dropout +float +0\.1 +\[0, 1\] +Dropout probability in the transformer\.$'
matches "a nullable string option" "$T/out" '^  pretrained_backbone_weights +string +ResNet18_Weights\.IMAGENET1K_V1 +any text or null +Torchvision'
matches "an enum option with its choices" "$T/out" '^  vision_backbone +enum +resnet18 +resnet18\|resnet34\|resnet50 +Image encoder\.$'
matches "a list option with its item type and range" "$T/out" '^  n_action_steps_list +list\[int\] +\[1,2\] +items in \[1, 100\] +Steps to execute per chunk\.$'
matches "a path option whose default is null" "$T/out" '^  stats_path +path +null +a path or null +Normalization'
matches "a required option" "$T/out" '^  device_name +string +\(required\) +any text +Device to train on\.$'
ok_run "show a module by its name when only one kind has it" "$ROBOTRAIN" plugins show fallback --plugin_path="$P"
contains "... which prints it" "$T/out" "  name         fallback"
fail_run 1 "show a name that two kinds use" "$ROBOTRAIN" plugins show good --plugin_path="$P"
contains "... says which modules it names" "$T/err" \
  "robotrain plugins: 'good' names 2 modules: backend-good, policy-good; ask for one of them by that full name"
fail_run 1 "show a module that does not exist" "$ROBOTRAIN" plugins show nope --plugin_path="$P"
contains "... names it and lists the modules found" "$T/err" \
  "robotrain plugins: no module named 'nope'; modules found: backend-good, policy-abi-major, policy-abi-minor, policy-fallback, policy-good,"
contains "... and the folders searched" "$T/err" "; searched: $P:$T/data/robotrain/plugins:"
fail_run 1 "show a refused module" "$ROBOTRAIN" plugins show abi-major --plugin_path="$P"
contains "... prints why it was refused" "$T/err" "robotrain plugins: $P/policy-abi-major.la: built for plugin ABI 2.0"

# ---- help and usage errors
ok_run "--help" "$ROBOTRAIN" plugins --help
contains "--help describes the flags" "$T/out" "--plugin_path=DIR[:DIR...]  search these folders first"
fail_run 2 "an unknown option" "$ROBOTRAIN" plugins --frobnicate
contains "... is named" "$T/err" "robotrain plugins: unknown option '--frobnicate'."
fail_run 2 "a --plugin_path folder that does not exist" "$ROBOTRAIN" plugins --plugin_path="$T/nowhere"
contains "... is named" "$T/err" "robotrain plugins: --plugin_path: '$T/nowhere' is not a folder"
ok_run "robotrain help plugins" "$ROBOTRAIN" help plugins
contains "... prints the same help" "$T/out" "usage: robotrain plugins [list] [--verbose] [--plugin_path=DIR[:DIR...]]"
fail_run 2 "--plugin_path without a value" "$ROBOTRAIN" plugins --plugin_path
contains "... says so" "$T/err" "robotrain plugins: --plugin_path needs a value"
fail_run 2 "show without a name" "$ROBOTRAIN" plugins show
contains "... says so" "$T/err" "robotrain plugins: show needs a module name: robotrain plugins show NAME"
fail_run 2 "a module name in place of the action" "$ROBOTRAIN" plugins good
block "... suggests show" "$T/err" "'good' is neither 'list' nor 'show'. To see a module, run
'robotrain plugins show good'."

# ---- nothing to find
"$ROBOTRAIN" plugins --verbose --plugin_path="$T/empty" >"$T/out" 2>"$T/err"
counts "an empty search path says so" "$T/out" "no modules found in the search path above"
exit $tap_failed
