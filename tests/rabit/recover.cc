/*
 * recover.cc — a program in the style of rabit's own recovery tests, written
 * to rabit's C++ API (rabit/rabit.h): a global model (a vector and a
 * string, a rabit::Serializable), with "local" a per-rank local model too,
 * with "lazy" LazyCheckPoint instead of CheckPoint.  Each iteration makes
 * six collectives (the sequence numbers of rabit's mock= kill points):
 *
 *   0  Allreduce<op::Max> with a lambda as the prepare function
 *   1  Allreduce<op::Sum> with a prepare function and its argument
 *   2, 3  Broadcast of a std::string (its size, then its bytes)
 *   4  Reducer<Range, MergeRange>::Allreduce (a program's own operator)
 *   5  SerializeReducer<Bag>::Allreduce (objects that serialise themselves)
 *
 * checks each result (utils::Check) and folds it into the models, then
 * checkpoints.  Every value is a small integer, exact in a double, so the
 * result is the same in any order of reduction (librally_mpi's too).  Rank
 * 0 prints "model_digest=HEX version=V": the global model and every rank's
 * local model.  "forget" (a negative control) throws away the local model a
 * restarted worker loads, which that digest must see.
 *
 *   rally-run -n N rabit_cxx_recover ITERS [local|lazy] [forget] [mock=...]...
 */
#include <rabit/rabit.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using rabit::utils::Check;

namespace {
const int kSize = 64;

struct Model : public rabit::Serializable {
    std::vector<double> w;
    std::string note;
    void Load(rabit::Stream *fi)
    {
        Check(fi->Read(&w) && fi->Read(&note), "Model::Load: the checkpoint is short");
    }
    void Save(rabit::Stream *fo) const
    {
        fo->Write(w);
        fo->Write(note);
    }
};

struct Local : public rabit::Serializable {
    std::vector<int> seen;
    void Load(rabit::Stream *fi) { Check(fi->Read(&seen), "Local::Load: the checkpoint is short"); }
    void Save(rabit::Stream *fo) const { fo->Write(seen); }
};

struct Range {
    long long lo, hi; // NOLINT
};
void MergeRange(Range &dst, const Range &src) // NOLINT
{
    if (src.lo < dst.lo)
        dst.lo = src.lo;
    if (src.hi > dst.hi)
        dst.hi = src.hi;
}

/* A set of small integers that serialises itself: the union of the ranks'. */
struct Bag {
    std::vector<int> items;
    void Load(rabit::Stream &fi) { Check(fi.Read(&items), "Bag::Load: short"); } // NOLINT
    void Save(rabit::Stream &fo) const { fo.Write(items); }                       // NOLINT
    void Reduce(const Bag &src, size_t max_nbyte)
    {
        std::vector<int> u;
        size_t i = 0, j = 0;
        while (i < items.size() || j < src.items.size()) {
            if (j == src.items.size() || (i < items.size() && items[i] < src.items[j]))
                u.push_back(items[i++]);
            else if (i == items.size() || src.items[j] < items[i])
                u.push_back(src.items[j++]);
            else
                u.push_back(items[i++]), j++;
        }
        Check(8 + u.size() * sizeof(int) <= max_nbyte, "Bag::Reduce: %zu items do not fit",
              u.size());
        items.swap(u);
    }
};

struct SumArg {
    std::vector<double> *buf;
    int rank, it;
};
void PrepareSum(void *arg)
{
    SumArg *a = static_cast<SumArg *>(arg);
    for (int i = 0; i < kSize; i++)
        (*a->buf)[i] = a->rank + i + a->it;
}

uint64_t Fnv(const std::string &b, uint64_t h)
{
    for (size_t i = 0; i < b.size(); i++)
        h = (h ^ static_cast<unsigned char>(b[i])) * 0x100000001b3ull;
    return h;
}
} // namespace

int main(int argc, char *argv[])
{
    if (argc < 2 || !rabit::Init(argc, argv)) {
        std::fprintf(stderr, "usage: rabit_cxx_recover ITERS [local|lazy] [forget] [mock=...]\n");
        return 2;
    }
    int iters = std::atoi(argv[1]);
    bool local = false, lazy = false, forget = false;
    for (int i = 2; i < argc; i++) {
        local |= std::strcmp(argv[i], "local") == 0;
        lazy |= std::strcmp(argv[i], "lazy") == 0;
        forget |= std::strcmp(argv[i], "forget") == 0;
    }
    int rank = rabit::GetRank(), world = rabit::GetWorldSize();
    rabit::TrackerPrintf("pid %d %ld\n", rank, static_cast<long>(getpid())); // NOLINT
    Model model;
    Local mine;
    int version = rabit::LoadCheckPoint(&model, local ? &mine : NULL);
    if (version == 0)
        model.w.assign(kSize, 0.0);
    if (forget && version > 0)
        mine.seen.clear();
    Check(version == rabit::VersionNumber(), "VersionNumber %d after loading version %d",
          rabit::VersionNumber(), version);
    Check(static_cast<int>(model.w.size()) == kSize, "a model of %zu", model.w.size());
    Check(!local || forget || static_cast<int>(mine.seen.size()) == version,
          "rank %d: a local model of %zu iterations at version %d", rank, mine.seen.size(),
          version);

    std::vector<double> mx(kSize), sm(kSize);
    rabit::Reducer<Range, MergeRange> ranges;
    rabit::SerializeReducer<Bag> bags;
    for (int it = version; it < iters; it++) {
        rabit::Allreduce<rabit::op::Max>(&mx[0], mx.size(), [&]() {
            for (int i = 0; i < kSize; i++)
                mx[i] = (rank * 7 + i * 3 + it) % 23;
        });
        for (int i = 0; i < kSize; i++) {
            int want = 0;
            for (int r = 0; r < world; r++)
                want = (r * 7 + i * 3 + it) % 23 > want ? (r * 7 + i * 3 + it) % 23 : want;
            Check(mx[i] == want, "iteration %d: max[%d] = %g, want %d", it, i, mx[i], want);
        }
        SumArg arg = {&sm, rank, it};
        rabit::Allreduce<rabit::op::Sum>(&sm[0], sm.size(), PrepareSum, &arg);
        for (int i = 0; i < kSize; i++)
            Check(sm[i] == world * (i + it) + world * (world - 1) / 2,
                  "iteration %d: sum[%d] = %g", it, i, sm[i]);
        int root = it % world;
        std::string s;
        if (rank == root)
            s = "iteration " + std::to_string(it) + " from rank " + std::to_string(root);
        rabit::Broadcast(&s, root);
        Check(s == "iteration " + std::to_string(it) + " from rank " + std::to_string(root),
              "iteration %d: broadcast '%s'", it, s.c_str());
        Range rg[2] = {{rank - it, rank + it}, {-rank, rank * it}};
        ranges.Allreduce(rg, 2);
        Check(rg[0].lo == -it && rg[0].hi == world - 1 + it && rg[1].lo == -(world - 1) &&
                  rg[1].hi == (world - 1) * it,
              "iteration %d: ranges [%lld, %lld] [%lld, %lld]", it, rg[0].lo, rg[0].hi,
              rg[1].lo, rg[1].hi);
        Bag bag;
        bags.Allreduce(&bag, 8 + sizeof(int) * 64, 1, [&]() {
            bag.items.clear();
            bag.items.push_back(rank % 5 + it);
            bag.items.push_back(40 + it);
        });
        Check(static_cast<int>(bag.items.size()) == (world < 5 ? world : 5) + 1 &&
                  bag.items[0] == it && bag.items.back() == 40 + it,
              "iteration %d: a bag of %zu", it, bag.items.size());
        // only now the model changes (what LazyCheckPoint asks)
        for (int i = 0; i < kSize; i++)
            model.w[i] += sm[i] * (it + 1) - mx[i] + static_cast<double>(rg[1].hi);
        model.note = s + " bag " + std::to_string(bag.items.size());
        mine.seen.push_back(rank * 1000 + it + static_cast<int>(sm[rank % kSize]));
        if (lazy)
            rabit::LazyCheckPoint(&model);
        else
            rabit::CheckPoint(&model, local ? &mine : NULL);
    }
    // the digest: the global model, and the sum of every rank's local one
    std::string bytes;
    rabit::utils::MemoryBufferStream fs(&bytes);
    model.Save(&fs);
    unsigned long long h = Fnv(bytes, 0xcbf29ce484222325ull), lh = 0; // NOLINT
    if (local) {
        std::string lb;
        rabit::utils::MemoryBufferStream ls(&lb);
        mine.Save(&ls);
        lh = Fnv(lb, 0xcbf29ce484222325ull + static_cast<unsigned>(rank));
    }
    rabit::Allreduce<rabit::op::Sum>(&lh, 1);
    if (rank == 0) {
        std::printf("model_digest=%016llx version=%d\n", h ^ lh, rabit::VersionNumber());
        std::fflush(stdout);
    }
    return rabit::Finalize() ? 0 : 1;
}
