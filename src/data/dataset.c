/*
 * dataset.c — the accessors of a struct rally_dataset (include/rally/data.h).
 * A dataset is immutable once read; these only look.
 */
#include <stdio.h>

#include "data/data.h"

uint64_t rally_data_num_rows(const rally_dataset_t *ds)
{
    return ds ? ds->nrows : 0;
}

uint64_t rally_data_num_features(const rally_dataset_t *ds)
{
    return ds ? ds->nfeat : 0;
}

uint64_t rally_data_num_entries(const rally_dataset_t *ds)
{
    return ds ? ds->nent : 0;
}

const char *rally_data_format(const rally_dataset_t *ds)
{
    return ds && ds->format == RALLY__FMT_LIBSVM ? "libsvm" : "csv";
}

const float *rally_data_labels(const rally_dataset_t *ds)
{
    return ds ? ds->label : NULL;
}

void rally_data_csr(const rally_dataset_t *ds, const uint64_t **row_ptr, const uint32_t **indices,
                    const float **values)
{
    if (row_ptr)
        *row_ptr = ds ? ds->row_ptr : NULL;
    if (indices)
        *indices = ds ? ds->idx : NULL;
    if (values)
        *values = ds ? ds->val : NULL;
}

int rally_data_row_dense(const rally_dataset_t *ds, uint64_t row, float *out, size_t count,
                         float missing)
{
    if (ds == NULL || row >= ds->nrows || (out == NULL && count > 0))
        return RALLY_EINVAL;
    uint64_t b = ds->row_ptr[row], e = ds->row_ptr[row + 1];
    if (e > b && ds->idx[e - 1] >= count)
        return RALLY_EINVAL;
    for (size_t j = 0; j < count; j++)
        out[j] = missing;
    for (uint64_t k = b; k < e; k++)
        out[ds->idx[k]] = ds->val[k];
    return RALLY_OK;
}

uint64_t rally_data_row_offset(const rally_dataset_t *ds, uint64_t row)
{
    return ds && row < ds->nrows ? ds->row_off[row] : UINT64_MAX;
}

const char *rally_data_feature_name(const rally_dataset_t *ds, uint64_t j)
{
    return ds && ds->names && j < ds->nfeat ? ds->names[j] : NULL;
}

void rally_data_shard_range(const rally_dataset_t *ds, uint64_t *first, uint64_t *end)
{
    if (first)
        *first = ds ? ds->first : 0;
    if (end)
        *end = ds ? ds->end : 0;
}

const char *rally_data_partition(const rally_dataset_t *ds)
{
    return ds && ds->partition == RALLY__PART_HASH ? "hash" : "range";
}

uint64_t rally_data_file_size(const rally_dataset_t *ds)
{
    return ds ? ds->fsize : 0;
}

int rally_data_range_owner(uint64_t file_size, uint64_t offset, int world)
{
    if (world < 1)
        return -1;
    int lo = 0, hi = world - 1; /* the largest r whose range starts at or before offset */
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (rally__data_split(file_size, mid, world) <= offset)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

int rally_data_fingerprint(const rally_dataset_t *ds, char *out, size_t cap)
{
    if (ds == NULL || out == NULL || cap < 17)
        return RALLY_EINVAL;
    snprintf(out, cap, "%016llx", (unsigned long long)ds->fp);
    return RALLY_OK;
}

void rally_data_describe(const rally_dataset_t *ds, char *out, size_t cap)
{
    if (out == NULL || cap == 0)
        return;
    if (ds == NULL) {
        snprintf(out, cap, "(no dataset)");
        return;
    }
    snprintf(out, cap,
             "%s shard %d/%d (%s): bytes [%llu, %llu), %llu rows, %llu features, fingerprint "
             "%016llx",
             ds->name, ds->rank, ds->world, ds->partition == RALLY__PART_HASH ? "hash" : "range",
             (unsigned long long)ds->first, (unsigned long long)ds->end,
             (unsigned long long)ds->nrows, (unsigned long long)ds->nfeat,
             (unsigned long long)ds->fp);
}
