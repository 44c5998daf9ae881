#!/bin/sh
# robotrain config without a subcommand: the questionnaire, driven through standard input.
# The expected files are written by hand from the answers; bad answers must be asked again
# with the reason; the end of the input before the last answer writes nothing.
. "$ROBOTRAIN_TEST_SRCDIR/tap.sh"
export XDG_CONFIG_HOME="$T/config"
conf="$XDG_CONFIG_HOME/robotrain/launch.conf"
unset CUDA_VISIBLE_DEVICES
export ROBOTRAIN_PLUGIN_PATH="$ROBOTRAIN_TEST_BUILDDIR/../plugins"
# has_line NAME FILE LINE: FILE holds LINE as a whole line
has_line() { grep -x -F -q -- "$3" "$2"; hl=$?; [ $hl -eq 0 ] || echo "# '$2' lacks the line: $3"; tap_result $hl "$1"; }
# answers TEXT ARGS...: runs robotrain config ARGS with TEXT (printf format) as its input
answers() { text=$1; shift; printf "$text" | "$ROBOTRAIN" config "$@" >"$T/out" 2>"$T/err"; }
# keys FILE: the file without comments and blank lines
keys() { grep -v -e '^#' -e '^$' "$1"; }

# ---- every default (no GPU is visible here)
answers '\n\n\n'; tap_result $? "three empty answers take every default"
printf '[launch]\ncompute_environment=LOCAL_MACHINE\ndistributed_type=no\nnum_machines=1\nmachine_rank=0\nmain_process_ip=null\nmain_process_port=29500\nnum_processes=1\ngpu_ids=all\nmixed_precision=no\nnum_cpu_threads_per_process=auto\n[core]\nplugin_path=\n' >"$T/want"
keys "$conf" >"$T/got"
cmp -s "$T/want" "$T/got"; r=$?; [ $r -eq 0 ] || diff "$T/want" "$T/got" | sed 's/^/# /'; tap_result $r "  the file holds the defaults"
contains "  it asks for the compute environment" "$T/out" "In which compute environment are you running?"
contains "  ... the kind of run, defaulting to no without GPUs" "$T/out" "Answer 1 to 3, or a name [no]: "
contains "  ... and mixed precision" "$T/out" "Do you wish to use mixed precision?"
! grep -q "How many machines" "$T/out"; tap_result $? "  a single process is not asked about machines"
contains "  it says what it wrote" "$T/out" "robotrain config: wrote $conf"
ok_run "  the file passes config check" "$ROBOTRAIN" config check

# ---- an existing file: asked before it is replaced
cp "$conf" "$T/before"
answers '\n'; fail_run_status=$?
[ $fail_run_status -eq 1 ]; tap_result $? "an existing file: an empty answer to 'Replace it?' keeps it (exit 1)"
contains "  ... asking first" "$T/out" "$conf exists already. Replace it?"
contains "  ... with no as the default" "$T/out" "Answer [no]: "
contains "  ... and saying it was kept" "$T/err" "robotrain config: $conf was left as it is."
cmp -s "$T/before" "$conf"; tap_result $? "  ... unchanged"
answers 'maybe\nn\n'
contains "  a bad yes/no answer is asked again" "$T/out" "Not a valid answer: 'maybe' is neither yes nor no (y or n). Please answer again."
answers ''
[ $? -eq 1 ]; tap_result $? "  the end of the input at that question: exit 1"
contains "  ... saying nothing was written" "$T/err" "robotrain config: Nothing was written."
answers 'yes\n\n\nfp16\n'; tap_result $? "  yes replaces it"
has_line "  ... with the new answers" "$conf" "mixed_precision=fp16"
answers '\n\nbf16\n' --force; tap_result $? "  --force replaces it without asking"
! grep -q "exists already" "$T/out"; tap_result $? "  ... no question"
has_line "  ... with the new answers" "$conf" "mixed_precision=bf16"

# ---- bad answers are asked again, with the reason
answers 'AMAZON_SAGEMAKER\n\nmulti_gpx\nMULTI_GPU\n\n1\n2\n0,0\n0\nabc\n1,0\nfp8\n3\n' --config_file="$T/gpu.conf"
tap_result $? "a multi-gpu dialog with bad answers on the way"
contains "  SageMaker is refused" "$T/out" "Not a valid answer: Amazon SageMaker (accelerate's AMAZON_SAGEMAKER) is not supported"
contains "  a word that is no choice" "$T/out" "Not a valid answer: 'multi_gpx' is none of the choices; answer a number from 1 to 3, or one of no, multi-cpu, multi-gpu. Please answer again."
contains "  one process is too few" "$T/out" "Not a valid answer: a multi-gpu run has 2 processes at least (for one, answer 'no' to the kind of run)"
contains "  a GPU listed twice" "$T/out" "Not a valid answer: GPU 0 is listed twice"
contains "  too few GPUs" "$T/out" "Not a valid answer: each machine runs 2 processes, one per GPU: list 2 GPUs at least, or answer all"
contains "  not a list of ids" "$T/out" "Not a valid answer: 'abc': item 1: 'abc' is not an integer"
contains "  an unknown precision" "$T/out" "Not a valid answer: 'fp8' is none of the choices"
keys "$T/gpu.conf" >"$T/got"
printf '[launch]\ncompute_environment=LOCAL_MACHINE\ndistributed_type=multi-gpu\nnum_machines=1\nmachine_rank=0\nmain_process_ip=null\nmain_process_port=29500\nnum_processes=2\ngpu_ids=1;0;\nmixed_precision=bf16\nnum_cpu_threads_per_process=auto\n[core]\nplugin_path=\n' >"$T/want"
cmp -s "$T/want" "$T/got"; r=$?; [ $r -eq 0 ] || diff "$T/want" "$T/got" | sed 's/^/# /'; tap_result $r "  --config_file: the file has the accepted answers"
[ ! -f "$conf.tmp" ] && ! grep -q "gpu_ids=1" "$conf"; tap_result $? "  ... and the default file is not touched"

# ---- with visible GPUs the defaults follow them
export CUDA_VISIBLE_DEVICES=0,1
answers '\n\n\n\n\n\n' --config_file="$T/two.conf"; tap_result $? "two visible GPUs: every default"
unset CUDA_VISIBLE_DEVICES
contains "  ... multi-gpu is the default kind" "$T/out" "Answer 1 to 3, or a name [multi-gpu]: "
contains "  ... two processes the default number" "$T/out" "Answer [2]: "
has_line "  ... in the file" "$T/two.conf" "num_processes=2"
has_line "  ... every GPU" "$T/two.conf" "gpu_ids=all"

# ---- two machines, CRLF line ends, a last answer without newline
answers '1\r\n2\r\n2\r\n5\r\n1\r\n10.0.0 .1\r\n10.0.0.1\r\n0\r\n29501\r\n3\r\n4\r\nx\r\n2\r\n2' --config_file="$T/m.conf"
tap_result $? "machine 1 of 2, multi-cpu, with CRLF and no final newline"
contains "  a rank out of range" "$T/out" "Not a valid answer: machine ranks count from 0: with 2 machines, give 0 to 1"
contains "  an address with a blank" "$T/out" "Not a valid answer: '10.0.0 .1' is not a host name or IP address: it has blanks"
contains "  port 0 over two machines" "$T/out" "Not a valid answer: 0 would pick a free port on machine 0, which the other machines cannot know"
contains "  processes not a multiple of machines" "$T/out" "Not a valid answer: 3 is the total over the 2 machines, which each run as many: give a multiple of 2"
contains "  threads that are not a number" "$T/out" "Not a valid answer: 'x' is not an integer; expected an integer from 1 to 4096, or auto"
keys "$T/m.conf" >"$T/got"
printf '[launch]\ncompute_environment=LOCAL_MACHINE\ndistributed_type=multi-cpu\nnum_machines=2\nmachine_rank=1\nmain_process_ip=10.0.0.1\nmain_process_port=29501\nnum_processes=4\ngpu_ids=all\nmixed_precision=fp16\nnum_cpu_threads_per_process=2\n[core]\nplugin_path=\n' >"$T/want"
cmp -s "$T/want" "$T/got"; r=$?; [ $r -eq 0 ] || diff "$T/want" "$T/got" | sed 's/^/# /'; tap_result $r "  the file has the accepted answers"
ok_run "  it passes config check" "$ROBOTRAIN" config check --config_file="$T/m.conf"

# ---- an answer that is too long
long=$(head -c 5000 /dev/zero | tr '\0' 7)
answers "\n${long}\n\n\n" --config_file="$T/long.conf"
contains "a 5000-character answer is refused" "$T/out" "Not a valid answer: the answer is longer than 4096 characters"

# ---- the end of the input before the last answer
answers 'LOCAL_MACHINE\nmulti-cpu\n' --config_file="$T/eof.conf"
[ $? -eq 1 ]; tap_result $? "the input ends in the middle: exit 1"
contains "  ... naming the question" "$T/err" "robotrain config: the input ended before this question was answered: How many machines will take part in the run (more than 1 for a multi-machine run)?"
contains "  ... saying nothing was written" "$T/err" "robotrain config: Nothing was written."
[ ! -e "$T/eof.conf" ] && [ -z "$(ls "$T" | grep 'eof.conf.')" ]; tap_result $? "  ... and nothing was written"
answers '' --config_file="$T/eof.conf"
[ $? -eq 1 ] && [ ! -e "$T/eof.conf" ]; tap_result $? "an empty input: exit 1, no file"

# ---- robotrain launch reads what the questions wrote; flags override it
answers '\nmulti-cpu\n\n3\n2\nbf16\n' --config_file="$T/run.conf"; tap_result $? "a multi-cpu file for 3 processes"
worker="$ROBOTRAIN_TEST_BUILDDIR/launch-worker"
mkdir "$T/w"
ok_run "launch reads it" "$ROBOTRAIN" launch --config_file="$T/run.conf" --main_process_port=0 -- "$worker" --dir="$T/w"
has_line "  3 workers (rank 2's WORLD_SIZE)" "$T/w/env.2" "WORLD_SIZE=3"
has_line "  with the precision of the file" "$T/w/env.0" "ROBOTRAIN_MIXED_PRECISION=bf16"
has_line "  and its CPU threads" "$T/w/env.1" "OMP_NUM_THREADS=2"
has_line "  on CPUs" "$T/w/env.1" "CUDA_VISIBLE_DEVICES="
mkdir "$T/w2"
ok_run "flags override it" "$ROBOTRAIN" launch --config_file="$T/run.conf" --main_process_port=0 --num_processes=2 \
  --mixed_precision=no -- "$worker" --dir="$T/w2"
has_line "  --num_processes=2" "$T/w2/env.1" "WORLD_SIZE=2"
[ ! -f "$T/w2/env.2" ]; tap_result $? "  ... no third worker"
has_line "  --mixed_precision=no" "$T/w2/env.0" "ROBOTRAIN_MIXED_PRECISION=no"

# ---- help
ok_run "config --help shows the questions' usage" "$ROBOTRAIN" config --help
contains "  ... first" "$T/out" "usage: robotrain config [--config_file=PATH] [--force[=true|false]]"
ok_run "config --force --help" "$ROBOTRAIN" config --force --help
contains "  ... the usage of the questions" "$T/out" "Ask about this machine and the run, and write the launch configuration."

plan $tap_n
exit $tap_failed
