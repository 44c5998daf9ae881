#!/bin/sh
# robotrain plugins: the listing, `show`, the search order (flag, environment, launch
# configuration, XDG folder), shadowing, and the errors, against the test modules of
# tests/plugins (see its README).
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

# Private user folders, whatever the caller's environment; no launch configuration yet.
XDG_DATA_HOME=$T/data; export XDG_DATA_HOME
XDG_CONFIG_HOME=$T/config; export XDG_CONFIG_HOME
conf=$T/config/robotrain/launch.conf
ROBOTRAIN_PLUGIN_PATH=; export ROBOTRAIN_PLUGIN_PATH

# The built-in plugin folder comes last in every search. When a robotrain is installed there,
# its modules join every listing, and the checks of whole counts are skipped.
mkdir "$T/empty"
"$ROBOTRAIN" plugins --plugin_path="$T/empty" >"$T/out" 2>&1
if grep -F -q "no modules found" "$T/out"; then installed=no; else installed=yes; fi
# counts "name" FILE TEXT: contains, or a skip when modules are installed in the built-in folder.
counts() { if [ $installed = yes ]; then tap_n=$((tap_n + 1)); echo "ok $tap_n # SKIP modules are installed in the built-in folder"
  else contains "$@"; fi; }

plan 106

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
block "--verbose prints the launch configuration read, and the search path" "$T/out" "launch configuration: $conf  (does not exist)
search path:
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

# ---- search order: the launch configuration's [core] plugin_path, between the environment
# and the user folder
mkdir -p "$T/config/robotrain"
printf '[core]\nplugin_path=%s;\n' "$P/shadow" >"$conf"
ok_run "key file and user folder" "$ROBOTRAIN" plugins show policy-good
contains "the key file's folder comes before the user folder" "$T/out" "  version      2.0.0-shadow"
contains "... and its module is used" "$T/out" "  file         $P/shadow/policy-good.la"
ROBOTRAIN_PLUGIN_PATH=$P ok_run "environment and key file" "$ROBOTRAIN" plugins show policy-good
contains "the environment's folder comes before the key file's" "$T/out" "  version      1.2.3"
ROBOTRAIN_PLUGIN_PATH=$P ok_run "flag, environment and key file" "$ROBOTRAIN" plugins show policy-good \
  --plugin_path="$P/shadow"
contains "the flag's folder comes before both" "$T/out" "  version      2.0.0-shadow"
mkdir "$T/flag" "$T/kf-a"
printf '[core]\nplugin_path=%s;%s;\n' "$T/kf-a" "$T/kf:b" >"$conf"
ROBOTRAIN_PLUGIN_PATH=$T/env ok_run "--verbose with every source" "$ROBOTRAIN" plugins --verbose --plugin_path="$T/flag"
block "... prints the five in order; a ':' inside a key-file folder is part of its name" "$T/out" \
"launch configuration: $conf
search path:
  $T/flag
  $T/env  (not a folder)
  $T/kf-a
  $T/kf:b  (not a folder)
  $T/data/robotrain/plugins"
printf '[core]\nplugin_path=%s;\n' "$P/shadow" >"$T/other.conf"
printf '[core]\nplugin_path=%s;\n' "$T/empty" >"$conf"
ok_run "--config_file names another launch configuration" "$ROBOTRAIN" plugins show policy-good \
  --config_file="$T/other.conf"
contains "... whose plugin_path is searched instead" "$T/out" "  version      2.0.0-shadow"
ok_run "... before or after the subcommand" "$ROBOTRAIN" plugins --config_file="$T/other.conf" show policy-good
contains "... the same" "$T/out" "  version      2.0.0-shadow"

# ---- a broken launch configuration is an error, reported as 'robotrain config check' does
printf '[core]\nplugin_pth=%s\n[launch]\nnum_processes=zero\n' "$P" >"$conf"
fail_run 1 "a launch configuration with an unknown key and a bad value" "$ROBOTRAIN" plugins --plugin_path="$P"
contains "... names the file, the group and the unknown key" "$T/err" \
  "robotrain plugins: $conf: [core] plugin_pth: unknown key (did you mean 'plugin_path'?); the keys of [core] are plugin_path"
contains "... and the bad value, with what is allowed" "$T/err" \
  "robotrain plugins: $conf: [launch] num_processes: 'zero' is not an integer; expected an integer from 1 to 65536"
block "... and says what to do" "$T/err" "robotrain plugins: its [core] plugin_path is part of the search path: fix the
file (robotrain.conf(5)), or name another with --config_file."
"$ROBOTRAIN" config check >"$T/check.out" 2>"$T/check.err"
sed 's/^robotrain config: //' "$T/check.err" >"$T/check.lines"
grep -F "robotrain plugins: $conf:" "$T/err" | sed 's/^robotrain plugins: //' >"$T/plugins.lines"
[ -s "$T/check.lines" ] && cmp -s "$T/check.lines" "$T/plugins.lines"; tap_result $? "... the same problems 'robotrain config check' reports"
printf '[core\n' >"$conf"
fail_run 1 "a launch configuration that is not a key file" "$ROBOTRAIN" plugins show policy-good --plugin_path="$P"
contains "... is named" "$T/err" "robotrain plugins: $conf: not a valid key file:"
fail_run 2 "a --config_file that does not exist" "$ROBOTRAIN" plugins --config_file="$T/nowhere.conf"
contains "... is named" "$T/err" "robotrain plugins: $T/nowhere.conf:"
contains "... with what to do" "$T/err" "robotrain plugins: --config_file names a file that does not exist; write it with
'robotrain config default --config_file=$T/nowhere.conf', or leave the flag out."
rm -rf "$T/data/robotrain" "$T/config/robotrain"

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
contains "a policy's options are shown as the --policy.KEY flags users type" "$T/out" "
policy options (--policy.*):
  --policy.use_vae[=true|false]"
block "a bool option, with its default" "$T/out" "  --policy.use_vae[=true|false]
                                Train with the variational objective. Default:
                                true."
block "an int option with its range" "$T/out" "  --policy.chunk_size=INT       Number of actions predicted per chunk. Allowed:
                                an integer from 1 to 1000. Default: 100."
block "a float option with its range" "$T/out" "  --policy.dropout=FLOAT        Dropout probability in the transformer.
                                Allowed: a number from 0.0 to 1.0. Default:
                                0.1."
block "a nullable string option" "$T/out" "  --policy.pretrained_backbone_weights=TEXT
                                Torchvision weights of the backbone, or null
                                for random. Allowed: text, or null. Default:
                                ResNet18_Weights.IMAGENET1K_V1."
block "an enum option with its choices" "$T/out" "  --policy.vision_backbone={resnet18,resnet34,resnet50}
                                Image encoder. Default: resnet18."
block "a list option with its item type and range" "$T/out" "  --policy.n_action_steps_list=[INT,...]
                                Steps to execute per chunk. Allowed: a list of
                                integers from 1 to 100 (a JSON array such as
                                [0,1], or 0,1). Default: [1,2]."
block "a path option whose default is null" "$T/out" "  --policy.stats_path=PATH      Normalization statistics to use instead of the
                                dataset's. Allowed: a path, or null. Default:
                                null."
matches "a required option" "$T/out" '^  --policy\.device_name=TEXT +Device to train on\. Required\.$'
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
contains "--help describes the flags" "$T/out" "  --plugin_path=PATH            Folders to search before all others"
block "... and the search order" "$T/out" "Folders are searched in this order; the first module of a name wins:
  1. --plugin_path
  2. \$ROBOTRAIN_PLUGIN_PATH
  3. [core] plugin_path of the launch configuration (--config_file)
  4. $T/data/robotrain/plugins
  5. "
ok_run "show --help" "$ROBOTRAIN" plugins show --help
block "... prints the usage of show" "$T/out" "usage: robotrain plugins show NAME [--plugin_path=PATH] [--config_file=PATH]

Print one module's descriptor and options."
fail_run 2 "an unknown option" "$ROBOTRAIN" plugins --frobnicate
contains "... is named" "$T/err" "robotrain plugins: unknown option '--frobnicate'. See 'robotrain plugins --help' for the options."
fail_run 2 "a mistyped option" "$ROBOTRAIN" plugins show good --plugin-pth="$P"
contains "... suggests the nearest one" "$T/err" \
  "robotrain plugins: unknown option '--plugin-pth'. Did you mean '--plugin_path'? See 'robotrain plugins show --help' for the options."
fail_run 2 "--verbose is an option of list only" "$ROBOTRAIN" plugins show good --verbose
contains "... and show refuses it" "$T/err" "robotrain plugins: unknown option '--verbose'. See 'robotrain plugins show --help'"
ok_run "options may come before the subcommand" "$ROBOTRAIN" plugins --plugin_path="$P" show fallback
contains "... which then runs" "$T/out" "  name         fallback"
fail_run 2 "... and are then checked against its own" "$ROBOTRAIN" plugins --verbose show fallback
contains "... so show still refuses --verbose" "$T/err" "robotrain plugins: unknown option '--verbose'. See 'robotrain plugins show --help'"
fail_run 2 "a --plugin_path folder that does not exist" "$ROBOTRAIN" plugins --plugin_path="$T/nowhere"
contains "... is named" "$T/err" "robotrain plugins: --plugin_path: '$T/nowhere' is not a folder"
ok_run "robotrain help plugins" "$ROBOTRAIN" help plugins
contains "... prints the same help" "$T/out" "usage: robotrain plugins [list] [--plugin_path=PATH] [--verbose[=true|false]] [--config_file=PATH]"
fail_run 2 "--plugin_path without a value" "$ROBOTRAIN" plugins --plugin_path
contains "... says so" "$T/err" "robotrain plugins: --plugin_path needs a value (a path, or null): write --plugin_path=VALUE or --plugin_path VALUE"
fail_run 2 "show without a name" "$ROBOTRAIN" plugins show
contains "... says so" "$T/err" "robotrain plugins: show needs a module name: robotrain plugins show NAME"
fail_run 2 "a module name in place of the action" "$ROBOTRAIN" plugins good
block "... suggests show" "$T/err" "'good' is neither 'list' nor 'show'. To see a module, run
'robotrain plugins show good'."
fail_run 2 "a mistyped subcommand" "$ROBOTRAIN" plugins lsit
block "... suggests the nearest one, and show" "$T/err" "robotrain plugins: 'lsit' is neither 'list' nor 'show'. Did you mean 'list'?
To see a module, run 'robotrain plugins show lsit'."
fail_run 2 "list with a module name" "$ROBOTRAIN" plugins list good
contains "... says list takes none" "$T/err" "robotrain plugins: unexpected argument 'good': 'list' takes no module name."
fail_run 2 "show with two names" "$ROBOTRAIN" plugins show good fallback
contains "... says show takes one" "$T/err" "robotrain plugins: unexpected argument 'fallback': show takes one module name."

# ---- nothing to find
"$ROBOTRAIN" plugins --verbose --plugin_path="$T/empty" >"$T/out" 2>"$T/err"
counts "an empty search path says so" "$T/out" "no modules found in the search path above"
exit $tap_failed
