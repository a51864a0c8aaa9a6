#!/bin/sh
# layers_test.sh SOURCE_DIR — every include points to the same or a lower
# layer (docs/architecture.md).  Prints every include that breaks a rule.
#
#   src/<layer>  itself and the layers below it (the table below)
#   src/api      util, snapshot and snapjob (the snapshot job it starts),
#                plus the engine interface (api/engine.h): api names no
#                engine's struct, so it cannot reach into one
#   src/snapjob  util and snapshot, and the engine interface it drives
#   tools        util, net, tracker, data and snapshot: the launcher, the
#                tracker and rally-snapshot, never the engine's insides
#   examples     the public headers (include/rally) alone, like any user
# The exceptions are one header, named in EXCEPT as part:header: an engine
# includes the interface it implements, and the snapshot job the interface
# whose ops it drives.  An include without a folder, or of
# a folder beside the including file or at the part's top (tools/run's
# launch/), is the part's own.
root=$1
allowed() {
    case $1 in
    util) echo "util" ;;
    net) echo "util net" ;;
    tracker) echo "util net tracker" ;;
    coll) echo "util net coll" ;;
    mock) echo "util mock" ;;
    robust) echo "util net tracker coll mock robust" ;;
    snapjob) echo "util snapshot snapjob" ;;
    api) echo "util snapshot snapjob api" ;;
    mpi) echo "util mpi" ;;
    data) echo "util data" ;;
    snapshot) echo "util snapshot" ;;
    tools) echo "util net tracker data snapshot" ;;
    examples) echo "" ;;
    *) return 1 ;;
    esac
}
EXCEPT=" robust:api/engine.h mpi:api/engine.h snapjob:api/engine.h "
bad=0
# check PART DIR: the includes of every .c and .h file under DIR.
check() {
    part=$1 dir=$2
    if ! ok=$(allowed "$part"); then
        echo "layers_test: unknown layer ${dir#"$root"/} (add it here and to the docs)"
        bad=1
        return
    fi
    for f in $(find "$dir" -name '*.[ch]' | sort); do
        for inc in $(sed -n 's|^#include "\([a-z_]*/[^"]*\)".*|\1|p' "$f" | sort -u); do
            dep=${inc%%/*}
            [ "$dep" = rally ] && continue           # the public headers
            [ -d "$(dirname "$f")/$dep" ] && continue # a folder of the part's own:
            [ -d "$dir/$dep" ] && continue            # beside the file, or in the part
            case " $ok " in *" $dep "*) continue ;; esac
            case $EXCEPT in *" $part:$inc "*) continue ;; esac
            echo "layers_test: ${f#"$root"/} includes $inc, which $part may not"
            bad=1
        done
    done
}
for dir in "$root"/src/*/; do
    check "$(basename "$dir")" "${dir%/}"
done
check tools "$root/tools"
check examples "$root/examples"
[ "$bad" -eq 0 ] && echo "layers_test: every include points down"
exit $bad
