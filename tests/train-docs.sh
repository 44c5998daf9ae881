#!/bin/sh
# Every option of robotrain train is documented: the train options in robotrain-train(1), the
# policy's in robotrain-policy(1); and every option robotrain-train(1) documents exists.
. "$ROBOTRAIN_TEST_SRCDIR/tap.sh"
man="$ROBOTRAIN_TEST_SRCDIR/../man"
"$ROBOTRAIN" train --policy.type=act --dump-options >"$T/dump" 2>"$T/err"
tap_result $? "robotrain train --policy.type=act --dump-options"
"$ROBOTRAIN" train --policy.type=act --help >"$T/help" 2>"$T/err"
tap_result $? "robotrain train --policy.type=act --help"
cut -f1 "$T/dump" >"$T/names"
while IFS= read -r name; do
  grep -F -q -e "  $name=" -e "  $name[=" "$T/help"; tap_result $? "$name is in --help"
  case "$name" in
    --policy.path) page=robotrain-train.pod ;;
    --policy.*) page=robotrain-policy.pod ;;
    *) page=robotrain-train.pod ;;
  esac
  grep -F -q -e "B<$name>" "$man/$page"; tap_result $? "$name is in $page"
done <"$T/names"
grep -o 'B<--[a-z_.A-Z]*>' "$man/robotrain-train.pod" | sed 's/^B<//; s/>$//' | sort -u >"$T/documented"
while IFS= read -r name; do
  case "$name" in --help | --key | *.) continue ;; esac # the syntax examples
  grep -F -x -q -e "$name" "$T/names"; tap_result $? "$name (robotrain-train.pod) is an option"
done <"$T/documented"
echo "1..$tap_n"
exit $tap_failed
