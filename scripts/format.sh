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
  bad=()
  for f in "${files[@]}"; do
    clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
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
