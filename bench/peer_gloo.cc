/*
 * peer_gloo.cc — the Gloo peer: gloo::allreduce with the ring algorithm over
 * Gloo's TCP transport on 127.0.0.1 (float32 sum, in place), timed exactly as
 * bench_allreduce.c times rally (see bench_common.h).
 *
 * Rendezvous through a gloo::rendezvous::FileStore in a directory.  bench/
 * run.sh starts the N processes itself:
 *     GLOO_RANK=r GLOO_SIZE=N GLOO_STORE=<dir> peer_gloo BYTES:REPS ...
 * Built by bench/run.sh with g++ -lgloo, not by CMake.
 */
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include "bench_common.h"

namespace
{

std::shared_ptr<gloo::Context> g_ctx;
uint32_t g_tag = 0;

template <typename T> void allreduce(T *buf, size_t count, gloo::AllreduceOptions::Func fn)
{
    gloo::AllreduceOptions opts(g_ctx);
    opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    opts.setOutput(buf, count);
    opts.setReduceFunction(fn);
    opts.setTag(g_tag++);
    gloo::allreduce(opts);
}

int env_int(const char *name)
{
    const char *v = getenv(name);
    if (!v) {
        fprintf(stderr, "peer_gloo: %s is not set\n", name);
        exit(2);
    }
    return atoi(v);
}

int run(int argc, char **argv)
{
    bench_spec spec[BENCH_MAX_SPECS];
    int nspec = bench_parse(argc, argv, 1, spec, BENCH_MAX_SPECS);
    if (nspec <= 0) {
        fprintf(stderr, BENCH_USAGE, argv[0]);
        return 2;
    }
    const int rank = env_int("GLOO_RANK");
    const int n = env_int("GLOO_SIZE");
    const char *dir = getenv("GLOO_STORE");
    if (!dir) {
        fprintf(stderr, "peer_gloo: GLOO_STORE is not set\n");
        return 2;
    }

    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    attr.ai_family = AF_INET;
    auto dev = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore store(dir);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, n);
    ctx->setTimeout(std::chrono::seconds(600));
    ctx->connectFullMesh(store, dev);
    g_ctx = ctx;

    const auto fsum = gloo::AllreduceOptions::Func(
        static_cast<void (*)(void *, const void *, const void *, size_t)>(&gloo::sum<float>));
    const auto fmax = gloo::AllreduceOptions::Func(
        static_cast<void (*)(void *, const void *, const void *, size_t)>(&gloo::max<double>));
    for (int s = 0; s < nspec; s++) {
        size_t count = spec[s].bytes / sizeof(float);
        std::vector<float> buf(count);
        std::vector<double> t(spec[s].reps + 1); // + the faults
        float token = 0;

        bench_fill_check(buf.data(), count, rank);
        allreduce(buf.data(), count, fsum);
        long bad = bench_verify(buf.data(), count, n);
        if (bad >= 0) {
            fprintf(stderr, "peer_gloo: rank %d: wrong sum at element %ld of %zu bytes\n", rank,
                    bad, spec[s].bytes);
            return 1;
        }
        memset(buf.data(), 0, spec[s].bytes);

        int warm = bench_warmup(spec[s].reps), batch = bench_batch(spec[s].bytes);
        double f0 = 0;
        for (int i = -warm; i < spec[s].reps; i++) {
            if (i == 0)
                f0 = bench_minflt();
            allreduce(&token, 1, fsum);
            double t0 = bench_now_us();
            for (int b = 0; b < batch; b++)
                allreduce(buf.data(), count, fsum);
            double t1 = bench_now_us();
            if (i >= 0)
                t[i] = (t1 - t0) / batch;
        }
        t[spec[s].reps] = (bench_minflt() - f0) / batch;
        allreduce(t.data(), t.size(), fmax);
        if (rank == 0)
            bench_report_as("RESULT", spec[s].bytes, t.data(), spec[s].reps,
                            t[spec[s].reps] / spec[s].reps);
    }
    g_ctx.reset();
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    try {
        return run(argc, argv);
    } catch (const std::exception &e) {
        fprintf(stderr, "peer_gloo: %s\n", e.what());
        return 1;
    }
}
