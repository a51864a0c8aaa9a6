/*
 * api.h — internal access to a handle's layers, for benchmarks and tests
 * that compare the robust path with the plain collective underneath.
 * Not part of the public API.
 */
#ifndef RALLY_API_API_H
#define RALLY_API_API_H

#include "rally/rally.h"
#include "robust/robust.h"

struct rally__robust *rally__api_robust(rally_t *r);

#endif
