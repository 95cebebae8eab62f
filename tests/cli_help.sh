#!/bin/sh
# cli_help.sh PATCHFUZZ "VERB [SUB]" FLAG...: `patchfuzz VERB --help` exits 0, -h prints the same,
# no line is wider than 100 columns, every FLAG (the verb's flags, listed by hand in tests/cli.cmake)
# has a row of its own in the option table, and every flag the usage lines name has one too.
pf=$1
verb=$2
shift 2
# shellcheck disable=SC2086 # VERB may be two words
out=$("$pf" $verb --help) || { echo "patchfuzz $verb --help: exit $?"; exit 1; }
# shellcheck disable=SC2086
short=$("$pf" $verb -h) || { echo "patchfuzz $verb -h: exit $?"; exit 1; }
[ "$short" = "$out" ] || { echo "patchfuzz $verb: -h and --help differ"; exit 1; }
printf '%s\n' "$out" | awk 'length($0) > 100 { print "wider than 100 columns: " $0; bad = 1 } END { exit bad }' || exit 1
rows=$(printf '%s\n' "$out" | grep -E '^  -')
has_row() { printf '%s\n' "$rows" | grep -qE -- "^  (-[^ ,]+, )*$1( |,|\$)"; }
for f in "$@"; do
  has_row "$f" || { echo "patchfuzz $verb --help: no row for $f"; printf '%s\n' "$out"; exit 1; }
done
usage=$(printf '%s\n' "$out" | sed -n '1,/^$/p' | sed 's/patchfuzz [^ ]*//')
for f in $(printf '%s\n' "$usage" | grep -oE -- '(^|[[ |(])--?[a-z][a-z0-9-]*' | sed 's/^[[ |(]//'); do
  has_row "$f" || { echo "patchfuzz $verb --help: the usage names $f, which has no row"; exit 1; }
done
echo "patchfuzz $verb --help: $# flags listed"
