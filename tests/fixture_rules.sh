#!/usr/bin/env bash
# The rule sets that the optimizer tests share, made once per ctest run
# (the fixture "rules", tests/CMakeLists.txt): the small set of
# tests/data/optimize_test.ini (candidates.h5, substitutions.h5) and the
# batch-normalization rules of jobs/batchnorm.ini (bn.c.h5, bn.h5), all
# generated and verified on 1 rank into $TASO_FIXTURE_DIR. Each file is
# made in a scratch folder and moved into place only when all four are
# done, so a failed or killed run leaves no half of a fixture behind; the
# tests copy the files (script_helpers.sh), never write them.
#
# ctest provides TASO_SOURCE_DIR, TASO_BIN_DIR, MPIEXEC and TASO_FIXTURE_DIR.
# A test that needs the files and runs alone, outside ctest, makes its own.
set -u
source "$(dirname "$0")/script_helpers.sh"
dir=${TASO_FIXTURE_DIR:?set TASO_FIXTURE_DIR}
from=${TASO_FIXTURE_FROM:-}
# TASO_FIXTURE_FROM: another build's fixture folder to take the four files
# from (scripts/setup.sh gives the sanitizer build the release build's:
# they are data; generate and verify run under the sanitizers in
# test_tools and test_verify_tools)
if [ -n "$from" ] && [ -s "$from/candidates.h5" ] && [ -s "$from/substitutions.h5" ] &&
  [ -s "$from/bn.c.h5" ] && [ -s "$from/bn.h5" ]; then
  for f in candidates substitutions bn.c bn; do
    cp "$from/$f.h5" "$tmp/$f.h5" || exit 1
  done
  echo "ok: the rule sets of $from"
else
  TASO_FIXTURE_DIR= optimizer_rules # made here, not copied from an older fixture
  [ "$fail" = 0 ] || exit 1
fi
mkdir -p "$dir" || exit 1
for f in candidates substitutions bn.c bn; do
  cp "$tmp/$f.h5" "$dir/.$f.h5.new" || exit 1
done
for f in candidates substitutions bn.c bn; do
  mv -f "$dir/.$f.h5.new" "$dir/$f.h5" || exit 1
done
echo "ok: the shared rule sets are in $dir"
