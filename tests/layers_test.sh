#!/bin/sh
# layers_test.sh SOURCE_DIR — a layer includes only itself and the layers
# below it (docs/architecture.md), except that an engine includes
# api/engine.h, the interface it implements.  Prints every include that
# breaks that.
src=$1/src
allowed() {
    case $1 in
    util) echo "util" ;;
    net) echo "util net" ;;
    tracker) echo "util net tracker" ;;
    coll) echo "util net coll" ;;
    mock) echo "util mock" ;;
    robust) echo "util net tracker coll mock robust" ;;
    api) echo "util net tracker coll mock robust api" ;;
    data) echo "util data" ;;
    esac
}
bad=0
for dir in "$src"/*/; do
    layer=$(basename "$dir")
    ok=$(allowed "$layer")
    [ -n "$ok" ] || { echo "layers_test: unknown layer src/$layer (add it here and to the docs)"; bad=1; continue; }
    for f in "$dir"*.c "$dir"*.h; do
        [ -e "$f" ] || continue
        for dep in $(grep -v '^#include "api/engine.h"' "$f" | sed -n 's|^#include "\([a-z]*\)/.*|\1|p' | sort -u); do
            [ "$dep" = rally ] && continue # the public headers
            case " $ok " in
            *" $dep "*) ;;
            *) echo "layers_test: ${f#"$1"/} includes $dep/, above $layer"; bad=1 ;;
            esac
        done
    done
done
[ "$bad" -eq 0 ] && echo "layers_test: every include points down"
exit $bad
