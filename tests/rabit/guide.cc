/*
 * guide.cc — the examples of rabit's guide, written from its text to
 * rabit's C++ API (rabit/rabit.h), each checking its own results:
 *
 *   basic           a[i] = rank + i; Allreduce<op::Max>, then op::Min,
 *                   op::Sum and op::BitOR over other types
 *   broadcast       rank 0's std::string and std::vector reach every rank
 *   lazy_allreduce  Allreduce<op::Max> with a lambda that fills the buffer
 *   reducer         Reducer<Span, Widen> on 200000 elements, and a
 *                   SerializeReducer of strings
 *   stream          a model through Stream's Write/Read of PODs, vectors,
 *                   strings, and back (no collectives)
 *
 * Each prints "guide_ok CASE rank R of N" through TrackerPrintf.
 *
 *   rally-run -n N rabit_cxx_guide CASE
 */
#include <rabit/rabit.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using rabit::utils::Check;

namespace {
const int N = 3;

void Basic(int rank, int world)
{
    int a[N];
    for (int i = 0; i < N; ++i)
        a[i] = rank + i;
    rabit::Allreduce<rabit::op::Max>(&a[0], N);
    for (int i = 0; i < N; ++i)
        Check(a[i] == world - 1 + i, "max: a[%d] = %d, want %d", i, a[i], world - 1 + i);
    float f[N];
    for (int i = 0; i < N; ++i)
        f[i] = static_cast<float>(rank * 2 - i);
    rabit::Allreduce<rabit::op::Min>(&f[0], N);
    for (int i = 0; i < N; ++i)
        Check(f[i] == static_cast<float>(-i), "min: f[%d] = %g", i, f[i]);
    std::vector<long long> s(N, rank + 1); // NOLINT
    rabit::Allreduce<rabit::op::Sum>(&s[0], s.size());
    Check(s[0] == world * (world + 1) / 2, "sum: %lld", s[0]);
    unsigned bits = 1u << (rank % 32);
    rabit::Allreduce<rabit::op::BitOR>(&bits, 1);
    unsigned want = 0;
    for (int r = 0; r < world; r++)
        want |= 1u << (r % 32);
    Check(bits == want, "bitor: %x, want %x", bits, want);
}

void Broadcast(int rank, int world)
{
    std::string s;
    std::vector<double> v;
    if (rank == 0) {
        s = "hello world";
        v.assign(5, 0.5);
    }
    rabit::Broadcast(&s, 0);
    rabit::Broadcast(&v, 0);
    Check(s == "hello world", "rank %d got '%s'", rank, s.c_str());
    Check(v.size() == 5 && v[4] == 0.5, "rank %d got a vector of %zu", rank, v.size());
    int x = rank == world - 1 ? 42 : 0;
    rabit::Broadcast(&x, sizeof x, world - 1);
    Check(x == 42, "raw broadcast: %d", x);
}

void LazyAllreduce(int rank, int world)
{
    std::vector<int> a(N);
    int calls = 0;
    rabit::Allreduce<rabit::op::Max>(&a[0], N, [&]() {
        calls++;
        for (int i = 0; i < N; ++i)
            a[i] = rank + i;
    });
    Check(calls == 1, "the lambda ran %d times", calls);
    for (int i = 0; i < N; ++i)
        Check(a[i] == world - 1 + i, "lazy max: a[%d] = %d", i, a[i]);
}

struct Span {
    int lo, hi;
};
void Widen(Span &dst, const Span &src) // NOLINT
{
    dst.lo = src.lo < dst.lo ? src.lo : dst.lo;
    dst.hi = src.hi > dst.hi ? src.hi : dst.hi;
}

/* The longest word any rank has: an object that serialises itself. */
struct Longest {
    std::string word;
    void Load(rabit::Stream &fi) { Check(fi.Read(&word), "Longest::Load: short"); } // NOLINT
    void Save(rabit::Stream &fo) const { fo.Write(word); }                          // NOLINT
    void Reduce(const Longest &src, size_t)
    {
        if (src.word.size() > word.size() || (src.word.size() == word.size() && src.word < word))
            word = src.word;
    }
};

/* A program's own operators: a Reducer over 200000 elements (big enough
 * for rally's ring and halving-doubling), with a lambda, and a
 * SerializeReducer over objects of different sizes. */
void Reducers(int rank, int world)
{
    const size_t n = 200000;
    std::vector<Span> v(n);
    rabit::Reducer<Span, Widen> widen;
    widen.Allreduce(&v[0], n, [&]() {
        for (size_t i = 0; i < n; i++) {
            v[i].lo = rank + static_cast<int>(i % 7);
            v[i].hi = rank * static_cast<int>(i % 5);
        }
    });
    for (size_t i = 0; i < n; i++)
        Check(v[i].lo == static_cast<int>(i % 7) && v[i].hi == (world - 1) * static_cast<int>(i % 5),
              "span %zu: [%d, %d]", i, v[i].lo, v[i].hi);
    Longest l[2];
    l[0].word = std::string(static_cast<size_t>(rank) + 1, static_cast<char>('a' + rank % 26));
    l[1].word = rank == 1 ? "one" : "x";
    rabit::SerializeReducer<Longest> longest;
    longest.Allreduce(l, 64, 2);
    Check(l[0].word == std::string(static_cast<size_t>(world),
                                   static_cast<char>('a' + (world - 1) % 26)),
          "longest: '%s'", l[0].word.c_str());
    Check(l[1].word == (world > 1 ? "one" : "x"), "longest: '%s'", l[1].word.c_str());
}

struct Model : public rabit::Serializable {
    int iter;
    std::vector<float> w;
    std::vector<std::string> names;
    std::string note;
    void Load(rabit::Stream *fi)
    {
        Check(fi->Read(&iter) && fi->Read(&w) && fi->Read(&names) && fi->Read(&note),
              "Model::Load: short");
    }
    void Save(rabit::Stream *fo) const
    {
        fo->Write(iter);
        fo->Write(w);
        fo->Write(names);
        fo->Write(note);
    }
};

void StreamRoundTrip()
{
    Model m, back;
    m.iter = 7;
    m.w.assign(3, 1.5f);
    m.names.push_back("a");
    m.names.push_back("bc");
    m.note = "note";
    std::string bytes;
    rabit::utils::MemoryBufferStream out(&bytes);
    m.Save(&out);
    // dmlc's layout: 4 + (8 + 3 * 4) + (8 + (8 + 1) + (8 + 2)) + (8 + 4): 63
    Check(bytes.size() == 63, "%zu bytes, want 63", bytes.size());
    rabit::utils::MemoryFixSizeBuffer in(&bytes[0], bytes.size());
    back.Load(&in);
    Check(back.iter == 7 && back.w == m.w && back.names == m.names && back.note == "note",
          "the model read back differs");
    int more;
    Check(!in.Read(&more), "a read past the end succeeded");
}
} // namespace

int main(int argc, char *argv[])
{
    if (argc < 2 || !rabit::Init(argc, argv)) {
        std::fprintf(stderr, "usage: rabit_cxx_guide basic|broadcast|lazy_allreduce|reducer|stream\n");
        return 2;
    }
    int rank = rabit::GetRank(), world = rabit::GetWorldSize();
    std::string c = argv[1];
    if (c == "basic")
        Basic(rank, world);
    else if (c == "broadcast")
        Broadcast(rank, world);
    else if (c == "lazy_allreduce")
        LazyAllreduce(rank, world);
    else if (c == "reducer")
        Reducers(rank, world);
    else if (c == "stream")
        StreamRoundTrip();
    else
        rabit::utils::Error("no case '%s'", c.c_str());
    Check(!rabit::GetProcessorName().empty(), "no processor name");
    rabit::TrackerPrintf("guide_ok %s rank %d of %d distributed %d\n", c.c_str(), rank, world,
                         rabit::IsDistributed() ? 1 : 0);
    return rabit::Finalize() ? 0 : 1;
}
