#!/bin/sh
# snapshot_tool_test.sh RALLY-SNAPSHOT SNAPSHOT_MK RALLY-KMEANS RALLY-DATAGEN GOLDEN
# rally-snapshot end to end: usage errors, ls across two runs (the latest
# is the newer run's, not the highest version), show, verify and dump of
# the golden snapshot, dump --app handing a real k-means model to
# rally-kmeans --show, damaged and incomplete snapshots, rm; every exit
# code the --help text documents.
set -u
tool=$1 mk=$2 kmeans=$3 datagen=$4 golden=$5
d=$(mktemp -d /tmp/rally-snapshot-tool-XXXXXX)
trap 'rm -rf "$d"' EXIT
fails=0
RA=0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0
RB=9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d

# expect NAME STATUS PATTERN -- CMD...: CMD exits STATUS and its output
# (stdout and stderr) matches the grep -E PATTERN ("" for any).
expect() {
    name=$1 want=$2 pat=$3
    shift 4
    out=$("$@" 2>&1)
    got=$?
    if [ "$got" -ne "$want" ]; then
        echo "FAIL $name: exit $got, want $want"; echo "$out" | head -n 20
        fails=$((fails + 1))
    elif [ -n "$pat" ] && ! echo "$out" | grep -Eq -- "$pat"; then
        echo "FAIL $name: output lacks /$pat/"; echo "$out" | head -n 20
        fails=$((fails + 1))
    else
        echo "ok   $name"
    fi
}

# usage
expect help 0 "^usage: rally-snapshot ls DIR" -- "$tool" --help
expect no_command 2 "a command is needed" -- "$tool"
expect unknown_command 2 "unknown command 'list'" -- "$tool" list "$d"
expect two_operands 2 "exactly one SNAP, got 2" -- "$tool" verify a b
expect app_not_dump 2 "belong to dump" -- "$tool" verify --app cat "$d"
expect bad_rank 2 "is not a rank" -- "$tool" dump --rank x "$d"
expect unknown_option 2 "unknown option '--frobnicate'" -- "$tool" ls --frobnicate "$d"

# the golden snapshot: verify, show, and the global model's first bytes
# (byte i of the golden global model is 2i + 82: tests/unit/snapshot_spec.h)
g=$golden/demo/snap-00000007
expect golden_verify 0 "ok: checkpoint version 7, 3 files, 364 bytes" -- "$tool" verify "$g"
expect golden_show 0 "^app config        --k 3 --iters 20$" -- "$tool" show "$g"
expect golden_show_host 0 "^rank 1 +host node-b  input fedcba9876543210$" -- "$tool" show "$g"
expect golden_dump 0 "^00000000  52 54 56 58 5a 5c 5e 60 62 64 66 68 6a 6c 6e 70  \|RTVXZ" \
    -- "$tool" dump "$g"
expect golden_dump_local 0 "^local model       rank 1, 24 bytes" -- "$tool" dump --rank 1 "$g"

# a real model: rally-kmeans alone (rank 0 of 1) saves it; two runs
"$datagen" --rows 300 --features 2 --centers 3 --seed 4 -o "$d/data.svm" >/dev/null 2>&1
digest=$("$kmeans" --data "$d/data.svm" -k 3 --model-out "$d/model.bin" --quiet |
         sed -n 's/^result: model_digest=\([0-9a-f]*\).*/\1/p')
[ -n "$digest" ] || { echo "FAIL kmeans: no model"; exit 1; }
s=$d/snaps
"$mk" "$s" km "$RB" 2026-11-29T08:00:00.000000Z 9 1 --global "$d/model.bin" >/dev/null &&
"$mk" "$s" km "$RA" 2026-11-30T08:00:00.000000Z 2 1 --global "$d/model.bin" >/dev/null &&
"$mk" "$s" km "$RA" 2026-11-30T08:00:00.000000Z 3 1 --global "$d/model.bin" >/dev/null &&
"$mk" "$s" km "$RA" 2026-11-30T08:00:00.000000Z 4 1 --no-commit &&
"$mk" "$s" wide "$RA" 2026-11-30T08:00:00.000000Z 1 3 --locals >/dev/null ||
    { echo "FAIL snapshot_mk"; exit 1; }
expect ls_latest_newest_run 0 "^  \* snap-00000003  complete" -- "$tool" ls "$s"
expect ls_old_run_not_latest 0 "^    snap-00000009  complete +9 +1 +216  9a8b7c6d" -- "$tool" ls "$s/km"
expect ls_incomplete 0 "snap-00000004  incomplete" -- "$tool" ls "$s/km"
expect ls_second_job 0 "^$s/wide:$" -- "$tool" ls "$s"
expect ls_empty 0 "no snapshots" -- "$tool" ls "$d"
expect verify_latest 0 "snap-00000003: ok: checkpoint version 3" -- "$tool" verify "$s/km/latest"
expect dump_latest_app 0 "\"model_digest\": \"$digest\"" -- "$tool" dump "$s/km/latest" --app "$kmeans"
expect latest_none 1 "holds no complete snapshot to resume from" -- "$tool" show "$d/latest"
expect rm_latest_refused 1 "\"latest\" is not a snapshot directory's name" -- "$tool" rm "$s/km/latest"
expect dump_app 0 "\"model_digest\": \"$digest\"" -- "$tool" dump "$s/km/snap-00000003" --app "$kmeans"
expect dump_app_centroids 0 "\"centroids\"" -- "$tool" dump "$s/km/snap-00000003" --app "$kmeans"
expect dump_app_fails 4 "--show failed \(exit status 1\)" -- "$tool" dump "$s/km/snap-00000003" --app false
expect dump_app_missing 4 "cannot run" -- "$tool" dump "$s/km/snap-00000003" --app "$d/no-such-printer"
expect dump_no_local 1 "holds no local model for rank 0" -- "$tool" dump --rank 0 "$s/km/snap-00000003"
expect verify_incomplete 1 "incomplete: it has no MANIFEST.json" -- "$tool" verify "$s/km/snap-00000004"
expect verify_missing_dir 3 "cannot open the directory" -- "$tool" verify "$s/km/snap-00000077"

# damage: a flipped byte, a truncated file, a symlink in place of a file
cp -r "$g" "$d/flip"
printf 'X' | dd of="$d/flip/local-0000.bin" bs=1 seek=80 conv=notrunc 2>/dev/null
expect verify_flipped 1 "local-0000.bin's checksum is [0-9a-f]{16}, the manifest says 5838f1d4b86a7925" \
    -- "$tool" verify "$d/flip"
expect dump_flipped 1 "checksum" -- "$tool" dump "$d/flip"
cp -r "$g" "$d/trunc"
truncate -s 100 "$d/trunc/global.bin"
expect verify_truncated 1 "global.bin is 100 bytes, the manifest says 172" -- "$tool" verify "$d/trunc"
cp -r "$g" "$d/link"
mv "$d/link/global.bin" "$d/global.bin"
ln -s "$d/global.bin" "$d/link/global.bin"
expect verify_symlink 1 "global.bin is a symbolic link" -- "$tool" verify "$d/link"
ln -s "$s/km/snap-00000003" "$s/km/snap-00000010"
expect ls_symlinked_snapshot 0 "snap-00000010 is a symbolic link" -- "$tool" ls "$s/km"

# rm: the snapshot goes; a stranger's file stops it; only snap-* names
expect rm_ok 0 "^removed " -- "$tool" rm "$s/km/snap-00000002"
[ ! -e "$s/km/snap-00000002" ] || { echo "FAIL rm_ok: still there"; fails=$((fails + 1)); }
echo notes > "$s/km/snap-00000009/notes.txt"
expect rm_stranger 1 "holds \"notes.txt\", which is not a snapshot file" -- "$tool" rm "$s/km/snap-00000009"
[ -e "$s/km/snap-00000009/MANIFEST.json" ] || { echo "FAIL rm_stranger: touched"; fails=$((fails + 1)); }
expect rm_not_snapshot 1 "is not a snapshot directory's name" -- "$tool" rm "$s/km"
expect rm_link 1 "symbolic link" -- "$tool" rm "$s/km/snap-00000010"
[ -e "$s/km/snap-00000003/MANIFEST.json" ] || { echo "FAIL rm_link: followed"; fails=$((fails + 1)); }

echo "snapshot_tool: $fails failed"
[ "$fails" -eq 0 ]
