#!/usr/bin/env bash
# The project's C and CUDA sources against the checked-in .clang-format.
#
#   bash scripts/format.sh check   list every file that differs, exit 1 if any
#   bash scripts/format.sh fix     format them in place
#
# The test command runs the check (ctest's "format" test), so a file that
# differs fails CI; `fix` is what to run before committing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v clang-format >/dev/null || {
  echo "format.sh: clang-format not found (Debian package clang-format)" >&2
  exit 1
}
mapfile -t files < <(find src tests bench -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) | sort)
case "${1:-}" in
fix)
  clang-format -i "${files[@]}"
  echo "format.sh: formatted ${#files[@]} files"
  ;;
check)
  # one clang-format for every file: it names each file that differs in
  # its warnings ("FILE:LINE:COL: error: code should be clang-formatted")
  status=0
  report=$(clang-format --dry-run -Werror "${files[@]}" 2>&1) || status=$?
  mapfile -t bad < <(echo "$report" |
    sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | sort -u)
  if [ "$status" -ne 0 ] && [ ${#bad[@]} -eq 0 ]; then
    echo "$report" >&2
    echo "format.sh: clang-format failed (exit status $status)" >&2
    exit 1
  fi
  if [ ${#bad[@]} -gt 0 ]; then
    echo "format.sh: ${#bad[@]} of ${#files[@]} files differ from .clang-format:" >&2
    printf '  %s\n' "${bad[@]}" >&2
    echo "format.sh: run 'bash scripts/format.sh fix' (or clang-format -i FILE)" >&2
    exit 1
  fi
  echo "format.sh: ${#files[@]} files match .clang-format"
  ;;
*)
  echo "usage: bash scripts/format.sh check|fix" >&2
  exit 2
  ;;
esac
