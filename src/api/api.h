/*
 * api.h — internal access to a handle's engine, for benchmarks and tests
 * that reach past the public API (the plain collective, checkpoint request
 * bits and commit hooks: the ops of api/engine.h).  Not part of the public
 * API.
 */
#ifndef RALLY_API_API_H
#define RALLY_API_API_H

#include "api/engine.h"
#include "rally/rally.h"

/* NULL when rally_init failed. */
struct rally__engine *rally__api_engine(rally_t *r);

#endif
