/*
 * local.c — --launcher local (kind.h): every worker is rally-run's own
 * child on this host, and the tracker listens on loopback.
 */
#include "launch/kind.h"

const struct rally__launch_kind rally__launch_kind_local = {
    .name = "local",
    .bind = "127.0.0.1",
    .grows = 1,
};
