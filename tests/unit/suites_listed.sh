#!/usr/bin/env bash
# Every gtest suite in the unit-test binary is one of the CTest tests (tests/CMakeLists.txt reads
# the suite names from the sources): a suite missing there would never run.
# Usage: suites_listed.sh UNIT_TEST_BINARY SUITE,SUITE,...
set -euo pipefail
binary=$1
IFS=, read -r -a listed <<<"$2"
declare -A known
for s in "${listed[@]}"; do known[$s]=1; done
missing=0
count=0
# --gtest_list_tests prints "Suite." or "Prefix/Suite." (parameterised) lines, then indented cases.
while read -r line; do
  suite=${line%.}
  suite=${suite##*/}
  count=$((count + 1))
  if [[ -z ${known[$suite]:-} ]]; then
    echo "suite $line is in $binary but not among the CTest tests" >&2
    missing=1
  fi
done < <("$binary" --gtest_list_tests | sed 's/  *#.*//' | grep -E '^[A-Za-z0-9_/]+\.$')
echo "$count suites listed, ${#listed[@]} CTest tests"
[[ $count -gt 0 && $missing -eq 0 ]]
