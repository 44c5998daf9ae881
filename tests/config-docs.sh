#!/bin/sh
# Every option the parser accepts is documented, and every documented option exists.
# For each "WORDS|PAGE" line below, each option that `robotrain WORDS --dump-options` lists must
# appear in `robotrain WORDS --help` and in man/PAGE, and each option man/PAGE documents must be
# listed by one of the commands that name PAGE. Flags ("--key") are looked for as "  --key=" in
# the help and B<--key> in the page; key-file keys ("[group] key") as "  key=" under "[group]"
# in the help and "=item B<key>" under "=head2 [group]" in the page.
# To cover another command, add a line such as: train|robotrain-train.pod
. "$ROBOTRAIN_TEST_SRCDIR/tap.sh"
man="$ROBOTRAIN_TEST_SRCDIR/../man"
commands='config default|robotrain-config.pod
config show|robotrain-config.pod
config check|robotrain-config.pod
config|robotrain.conf.pod
plugins|robotrain-plugins.pod
plugins list|robotrain-plugins.pod
plugins show|robotrain-plugins.pod
launch|robotrain-launch.pod
dataset info|robotrain-dataset.pod
dataset show|robotrain-dataset.pod
dataset download|robotrain-dataset.pod
push|robotrain-push.pod
policy check|robotrain-policy.pod
policy info|robotrain-policy.pod
policy info --policy.type=act|robotrain-policy.pod
policy bench|robotrain-policy.pod
policy bench --policy.type=act|robotrain-policy.pod'

# in_section FILE HEADER_PREFIX GROUP LINE_PREFIX: a line starting with LINE_PREFIX in FILE,
# inside the section whose header is HEADER_PREFIX[GROUP] ("[" for help, "=head2 [" for POD)
in_section() {
  awk -v hp="$2" -v g="$3" -v lp="$4" '
    index($0, hp) == 1 && $0 ~ /\]$/ { sec = substr($0, length(hp) + 1, length($0) - length(hp) - 1); next }
    /^=head1/ { sec = "" }
    sec == g && index($0, lp) == 1 { found = 1 }
    END { exit !found }' "$1"
}

echo "$commands" >"$T/commands"
while IFS='|' read -r words page; do
  pod="$man/$page"
  # shellcheck disable=SC2086 # WORDS are several arguments on purpose
  "$ROBOTRAIN" $words --dump-options >"$T/dump" 2>"$T/err"
  tap_result $? "robotrain $words --dump-options"
  # shellcheck disable=SC2086
  "$ROBOTRAIN" $words --help >"$T/help" 2>"$T/err"
  tap_result $? "robotrain $words --help"
  [ -s "$T/dump" ]; tap_result $? "robotrain $words lists some options"
  cut -f1 "$T/dump" >"$T/names"
  cat "$T/names" >>"$T/documented.$page"
  while IFS= read -r name; do
    case "$name" in
      --*)
        grep -F -q -e "  $name=" -e "  $name[=" "$T/help"; tap_result $? "$name is in 'robotrain $words --help'"
        grep -F -q -e "B<$name>" "$pod"; tap_result $? "$name is in $page" ;;
      \[*)
        group=${name#\[}; group=${group%%\]*}; key=${name#*\] }
        in_section "$T/help" "[" "$group" "  $key="; tap_result $? "$name is in 'robotrain $words --help'"
        in_section "$pod" "=head2 [" "$group" "=item B<$key>"; tap_result $? "$name is in $page" ;;
      *) tap_result 1 "'$name' is neither a flag nor a key" ;;
    esac
  done <"$T/names"
done <"$T/commands"

# The other way round: what the pages document exists.
cut -d'|' -f2 "$T/commands" | sort -u >"$T/pages"
while IFS= read -r page; do
  awk '
    /^=head2 \[.*\]$/ { sec = substr($0, 9, length($0) - 9); next }
    /^=head1/ { sec = "" }
    /^=item B<--/ { n = $0; sub(/^=item B</, "", n); sub(/>.*/, "", n); if (n != "--help") print n; next }
    sec != "" && /^=item B</ { n = $0; sub(/^=item B</, "", n); sub(/>.*/, "", n); print "[" sec "] " n }
  ' "$man/$page" >"$T/items"
  while IFS= read -r item; do
    grep -F -x -q -- "$item" "$T/documented.$page"; tap_result $? "$page documents '$item', which the parser accepts"
  done <"$T/items"
done <"$T/pages"

# The example of robotrain.conf(5) is a valid file.
awk '/^=head1 EXAMPLE/ { on = 1; next } /^=head1/ { on = 0 } on && /^    / { print substr($0, 5) } on && /^$/ { print }' \
  "$man/robotrain.conf.pod" >"$T/example.conf"
grep -q '^\[launch\]' "$T/example.conf"; tap_result $? "robotrain.conf(5) has an example"
ok_run "the example of robotrain.conf(5) passes 'robotrain config check'" \
  "$ROBOTRAIN" config check --config_file="$T/example.conf"

plan $tap_n
exit $tap_failed
