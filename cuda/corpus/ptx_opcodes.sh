#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# ptx_opcodes.sh FILE.ptx...: every PTX instruction with its modifiers and
# how often it occurs, most frequent first (predicates, labels, directives,
# comments and call argument lists left out). README.md's table is its
# output over the build folder's *.clang.ptx and *.nvcc.ptx.
cat "$@" | sed 's|//.*||' | tr ';{}' '\n\n\n' | sed -E 's/^[[:space:]]*(@!?%[a-z0-9]+[[:space:]]+)?//' |
  grep -E '^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*([[:space:]]|$)' | awk '$1 !~ /^param[0-9]/ {print $1}' |
  sort | uniq -c | sort -rn
