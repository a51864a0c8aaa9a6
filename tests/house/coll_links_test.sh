#!/bin/sh
# coll_links_test.sh SOURCE_DIR — src/coll moves bytes and waits only through
# link ops (net/link.h): no poll(), no descriptors, no socket calls.  Prints
# every line that breaks that.
bad=$(grep -nE '<(poll|sys/socket|sys/uio|unistd)\.h>|"net/(sock|mesh|tcp|auth|frame)\.h"|[^_a-z](poll|send|recv|sendmsg|recvmsg|read|write|close)\(|_fd\b|->fd\b|\.fd\b' \
    "$1"/src/coll/*.c "$1"/src/coll/*.h)
if [ -n "$bad" ]; then
    echo "coll_links_test: src/coll reaches past the link ops:"
    echo "$bad"
    exit 1
fi
echo "coll_links_test: src/coll uses only link ops"
