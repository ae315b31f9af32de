#!/usr/bin/env bash
# usage: save-golden.sh NAME RUN_DIR
#
# Keep a real guest run as a golden log for the host tests: the files the
# verdict reads (console.log, results.log, run.json, kernel.config,
# programs.txt) go to tests/data/NAME/. Run it after a make vmtest whose
# verdict you checked; tests/data/README says which runs are kept.
. "$(dirname "$0")/lib.sh"

[ $# -eq 2 ] || die "usage: save-golden.sh NAME RUN_DIR"
name=$1 run=$2
for f in console.log results.log run.json kernel.config programs.txt; do
	[ -f "$run/$f" ] || die "$run/$f missing: give the directory of a whole make vmtest run"
done
dst=$ROOT/tests/data/$name
rm -rf "$dst"
mkdir -p "$dst"
cp "$run"/{console.log,results.log,run.json,kernel.config,programs.txt} "$dst/"
log "golden log $name: $dst (from $run)"
