#!/bin/sh
# The robotrain program's top level: --version, --help, help CMD, unknown commands.
. "$ROBOTRAIN_TEST_SRCDIR/tap.sh"
plan 18
ok_run "--version exits 0" "$ROBOTRAIN" --version
contains "--version names the package version" "$T/out" "robotrain 0.1.0"
ok_run "--help exits 0" "$ROBOTRAIN" --help
contains "--help lists the plugins command" "$T/out" "plugins"
contains "--help lists the config command" "$T/out" "config"
fail_run 2 "an unknown command is a usage error" "$ROBOTRAIN" plugns
contains "the error suggests the nearest command" "$T/err" "Did you mean 'plugins'?"
fail_run 2 "a command with two letters swapped" "$ROBOTRAIN" cnofig show
contains "... is one edit away: the nearest command is suggested" "$T/err" "robotrain: 'cnofig' is not a robotrain command. Did you mean 'config'?"
fail_run 2 "a word far from every command" "$ROBOTRAIN" frobnicate
contains "... is named" "$T/err" "robotrain: 'frobnicate' is not a robotrain command."
! grep -F -q "Did you mean" "$T/err"; tap_result $? "... and nothing is suggested"
ok_run "help COMMAND" "$ROBOTRAIN" help plugins
contains "... prints that command's help" "$T/out" "usage: robotrain plugins [list]"
ok_run "help config" "$ROBOTRAIN" help config
contains "... prints config's help" "$T/out" "or: robotrain config default"
fail_run 2 "no command is a usage error" "$ROBOTRAIN"
fail_run 2 "an unknown option before the command is a usage error" "$ROBOTRAIN" --frobnicate
exit $tap_failed
