#!/bin/sh
# robotrain config default/show/check through the real program. HOME and XDG_CONFIG_HOME are
# private to the test run (AM_TESTS_ENVIRONMENT); this script also uses a folder of its own.
. "$ROBOTRAIN_TEST_SRCDIR/tap.sh"
plan 70
unset CUDA_VISIBLE_DEVICES
export XDG_CONFIG_HOME="$T/config"
conf="$XDG_CONFIG_HOME/robotrain/launch.conf"
# has_line NAME FILE LINE: FILE holds LINE as a whole line
has_line() { grep -x -F -q -- "$3" "$2"; r=$?; [ $r -eq 0 ] || echo "# '$2' lacks the line: $3"; tap_result $r "$1"; }

# ---- usage
fail_run 1 "config without a subcommand asks questions, and fails when the input ends" "$ROBOTRAIN" config </dev/null
contains "  ... saying that nothing was written" "$T/err" "robotrain config: Nothing was written."
ok_run "config --help exits 0" "$ROBOTRAIN" config --help
contains "  --help lists the subcommands" "$T/out" "   or: robotrain config check [--config_file=PATH]"
contains "  --help names the default file" "$T/out" "by default $conf"
contains "  --help lists the keys of the file" "$T/out" "  num_processes=INT"
ok_run "help config exits 0" "$ROBOTRAIN" help config
contains "  and prints the same help" "$T/out" "keys of the file (robotrain.conf(5)):"
fail_run 2 "an unknown subcommand is a usage error" "$ROBOTRAIN" config shwo
contains "  ... that suggests the nearest one" "$T/err" "'shwo' is not a subcommand of config. Did you mean 'show'?"
fail_run 2 "a mistyped flag of the questions is a usage error" "$ROBOTRAIN" config --forse </dev/null
contains "  ... that suggests the flag" "$T/err" "unknown option '--forse'. Did you mean '--force'?"
ok_run "config show --help exits 0" "$ROBOTRAIN" config show --help
contains "  ... with the subcommand's usage" "$T/out" "usage: robotrain config show [--config_file=PATH]"

# ---- no file yet
ok_run "show without a file prints the defaults" "$ROBOTRAIN" config show
contains "  ... saying the file does not exist" "$T/out" "# $conf does not exist: every value is the default"
contains "  ... every key with its source" "$T/out" "num_processes=1                          # default"
contains "  ... including [core]" "$T/out" "plugin_path=                             # default"
fail_run 1 "check without a file fails" "$ROBOTRAIN" config check
contains "  ... naming the file" "$T/err" "robotrain config: $conf: No such file or directory"
contains "  ... and saying how to write one" "$T/err" "write one with 'robotrain config default'"

# ---- default
ok_run "default writes the file" "$ROBOTRAIN" config default
contains "  ... and says what it wrote" "$T/out" "wrote $conf (distributed_type=no, num_processes=1, mixed_precision=no)"
has_line "  the file has num_processes=1 (no GPU visible)" "$conf" "num_processes=1"
has_line "  the file has distributed_type=no" "$conf" "distributed_type=no"
has_line "  the file has gpu_ids=all" "$conf" "gpu_ids=all"
contains "  the file documents each key" "$conf" "# TCP port of the rendezvous on machine rank 0; 0 picks a free port."
fail_run 1 "default refuses to overwrite" "$ROBOTRAIN" config default
contains "  ... saying so" "$T/err" "robotrain config: $conf already exists; it was left as it is."
contains "  ... and how to replace it" "$T/err" "Use --force to replace it"
ok_run "default --force --mixed_precision=bf16 replaces it" "$ROBOTRAIN" config default --force --mixed_precision=bf16
has_line "  the file has mixed_precision=bf16" "$conf" "mixed_precision=bf16"
ok_run "default --force --mixed_precision fp16 (value as the next argument)" "$ROBOTRAIN" config default --force --mixed_precision fp16
has_line "  the file has mixed_precision=fp16" "$conf" "mixed_precision=fp16"
ok_run "two visible GPUs give two processes" env CUDA_VISIBLE_DEVICES=0,1 "$ROBOTRAIN" config default --force
has_line "  ... num_processes=2" "$conf" "num_processes=2"
has_line "  ... distributed_type=multi-gpu" "$conf" "distributed_type=multi-gpu"
fail_run 2 "a bad --mixed_precision is a usage error" "$ROBOTRAIN" config default --force --mixed_precision=fp32
contains "  ... listing the choices" "$T/err" "robotrain config: --mixed_precision: 'fp32' is not allowed; expected one of no, fp16, bf16"
fail_run 2 "a mistyped flag is a usage error" "$ROBOTRAIN" config default --mixed_precison=fp16
contains "  ... that suggests the flag" "$T/err" "unknown option '--mixed_precison'. Did you mean '--mixed_precision'?"
fail_run 2 "--config_file without a value is a usage error" "$ROBOTRAIN" config check --config_file
contains "  ... saying it needs one" "$T/err" "--config_file needs a value"
fail_run 2 "a positional argument is a usage error" "$ROBOTRAIN" config show extra
contains "  ... naming it" "$T/err" "unexpected argument 'extra'"
ok_run "default --config_file writes elsewhere, creating folders" "$ROBOTRAIN" config default --config_file="$T/new/dir/x.conf"
contains "  ... there" "$T/out" "wrote $T/new/dir/x.conf"

# ---- show and check a good file
ok_run "show prints the file's values" "$ROBOTRAIN" config show
contains "  ... naming the file" "$T/out" "# $conf"
contains "  ... with 'file' as their source" "$T/out" "num_processes=2                          # file"
contains "  ... in groups" "$T/out" "[launch]"
ok_run "check accepts it" "$ROBOTRAIN" config check
contains "  ... and says so" "$T/out" "robotrain config: $conf is valid"

# ---- a hand-edited file: partial, then wrong
bad="$T/bad.conf"
printf '[launch]\nmixed_precision=bf16\n' >"$bad"
ok_run "show of a partial file" "$ROBOTRAIN" config show --config_file="$bad"
contains "  ... marks the key from the file" "$T/out" "mixed_precision=bf16                     # file"
contains "  ... and the others as defaults" "$T/out" "main_process_port=29500                  # default"
printf '[launch]\nnum_processes=two\nbogus=1\nmain_process_port=70000\n[lanch]\n' >"$bad"
fail_run 1 "check rejects a bad file" "$ROBOTRAIN" config check --config_file="$bad"
contains "  ... a bad integer, naming file, group and key" "$T/err" "robotrain config: $bad: [launch] num_processes: 'two' is not an integer; expected an integer from 1 to 65536"
contains "  ... an unknown key" "$T/err" "robotrain config: $bad: [launch] bogus: unknown key"
contains "  ... a value out of range" "$T/err" "robotrain config: $bad: [launch] main_process_port: 70000 is out of range; expected an integer from 0 to 65535"
contains "  ... an unknown group" "$T/err" "robotrain config: $bad: unknown group [lanch] (did you mean [launch]?)"
fail_run 1 "show rejects it too" "$ROBOTRAIN" config show --config_file="$bad"
contains "  ... with the same errors" "$T/err" "[launch] num_processes: 'two' is not an integer"
printf '[launch]\ndistributed_type=multi-gpu\nnum_processes=1\nmachine_rank=3\n' >"$bad"
fail_run 1 "check rejects inconsistent keys" "$ROBOTRAIN" config check --config_file="$bad"
contains "  ... machine_rank >= num_machines" "$T/err" "$bad: [launch] machine_rank: machine_rank = 3 must be less than num_machines (1, the default)"
contains "  ... multi-gpu with one process" "$T/err" "$bad: [launch] distributed_type: distributed_type multi-gpu needs at least 2 processes, but num_processes is 1, from $bad"

# ---- the machine-readable listings used by config-docs.sh
ok_run "config --dump-options lists the keys" "$ROBOTRAIN" config --dump-options
contains "  ... as [group] key, type, default" "$T/out" "[launch] main_process_port	int	29500"
ok_run "config default --dump-options lists its flags" "$ROBOTRAIN" config default --dump-options
contains "  ... as --flag, type, default" "$T/out" "--mixed_precision	enum	no"
exit $tap_failed
