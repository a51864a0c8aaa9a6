/*
 * rabit/rabit.h — rabit's C++ API (its last release's) over rally, header
 * only: a program written for rabit compiles unchanged against it and
 * links -lrabit (librally), -lrabit_mock (librally_mock) or -lrabit_mpi
 * (librally_mpi).  Every call goes through rally's C API: rabit's C API
 * (rally/rabit_c_api.h, one process-global rally handle, rabit's mock= and
 * rabit_* arguments) and, for what that lacks, rally.h on its handle
 * (RabitRallyHandle): custom reducers and lazy checkpoints of a model that
 * is serialised only when a recovering worker needs it.
 *
 * As in rabit, a call returns only when it succeeded: a failure rally
 * cannot recover from prints "rabit: <call>: <why>" on standard error and
 * ends the process with status 1; one thread uses the API at a time.
 *
 * What rabit had and this layer has not:
 *   - the caller's file, line and function as default arguments of the
 *     collectives (_file, _line, _caller), and the engine's SetCache and
 *     GetCache (engine::GetEngine()->SetCache(key, buf, len)): they keyed
 *     rabit's bootstrap cache (rabit_bootstrap_cache=1), which kept the
 *     results of collectives before the first LoadCheckPoint for a
 *     restarted worker.  rally always keeps those results and finds them by
 *     the order of the calls (docs/recovery.md), so there is nothing to
 *     key or to store by hand;
 *   - Allgather, TrackerSetConfig and TrackerGetConfig (not in rabit's
 *     guide; rally.h has rally_allgather).
 */
#ifndef RABIT_RABIT_H_
#define RABIT_RABIT_H_

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <typeinfo>
#include <vector>

#include <rally/rabit_c_api.h>
#include <rally/rally.h>

#include "./internal/io.h"
#include "./internal/utils.h"
#include "./serializable.h"

namespace rabit {

/* The reduction operators of Allreduce<OP>.  Reduce is the operator on
 * one pair, for a program's own reducers. */
namespace op {
struct Max {
    static const int kType = RABIT_MAX;
    template <typename DType> static void Reduce(DType &dst, const DType &src)
    {
        if (dst < src)
            dst = src;
    }
};
struct Min {
    static const int kType = RABIT_MIN;
    template <typename DType> static void Reduce(DType &dst, const DType &src)
    {
        if (src < dst)
            dst = src;
    }
};
struct Sum {
    static const int kType = RABIT_SUM;
    template <typename DType> static void Reduce(DType &dst, const DType &src) { dst += src; }
};
struct BitOR {
    static const int kType = RABIT_BITOR;
    template <typename DType> static void Reduce(DType &dst, const DType &src) { dst |= src; }
};
} // namespace op

namespace detail {
/* rabit's data-type numbers (rabit_c_api.h) of the types Allreduce takes. */
template <typename DType> struct TypeOf; /* another type: no Allreduce<OP> for it */
template <> struct TypeOf<char> { static const int kType = RABIT_CHAR; };
template <> struct TypeOf<unsigned char> { static const int kType = RABIT_UCHAR; };
template <> struct TypeOf<int> { static const int kType = RABIT_INT; };
template <> struct TypeOf<unsigned> { static const int kType = RABIT_UINT; };
template <> struct TypeOf<long> { static const int kType = RABIT_LONG; };          // NOLINT
template <> struct TypeOf<unsigned long> { static const int kType = RABIT_ULONG; }; // NOLINT
template <> struct TypeOf<float> { static const int kType = RABIT_FLOAT; };
template <> struct TypeOf<double> { static const int kType = RABIT_DOUBLE; };
template <> struct TypeOf<long long> { static const int kType = RABIT_LONGLONG; }; // NOLINT
template <> struct TypeOf<unsigned long long> {                                  // NOLINT
    static const int kType = RABIT_ULONGLONG;
};

/* rabit's way with an error (as rabit_c_api.h's): say what failed, end. */
inline void Die(const char *call, const char *why)
{
    std::fprintf(stderr, "rabit: %s: %s\n", call, why);
    std::fflush(stderr);
    std::exit(1);
}

/* The handle under the C API, for the calls it lacks. */
inline rally_t *Handle(const char *call)
{
    rally_t *r = RabitRallyHandle();
    if (r == NULL)
        Die(call, "call rabit::Init first (it failed, or was not called)");
    return r;
}

inline void Need(rally_t *r, const char *call, int rc)
{
    if (rc != RALLY_OK) {
        std::string why = std::string(rally_errmsg(r)) + " (" + rally_strstatus(rc) + ")";
        Die(call, why.c_str());
    }
}

/* A prepare function given as a std::function. */
inline void InvokeFunction(void *fun)
{
    (*static_cast<std::function<void()> *>(fun))();
}

/* A reducer's id (0..255) on the handle: from its type's name, so that it
 * is the same on every rank and in a restarted worker whatever order the
 * program first uses its reducers in.  Two reducers may share an id: each
 * call registers its own reducer first. */
inline int ReducerId(const char *type_name)
{
    uint32_t h = 2166136261u;
    for (const char *p = type_name; *p != '\0'; p++)
        h = (h ^ static_cast<unsigned char>(*p)) * 16777619u;
    return static_cast<int>(h % 256u);
}

/* The checkpoint's serialised models, kept from one checkpoint to the next
 * so that their memory is reused. */
inline std::string &ModelBuffer(int which)
{
    static std::string buf[2];
    return buf[which];
}

inline uint64_t SaveLazy(void *model, void *buf, uint64_t cap)
{
    std::string &b = ModelBuffer(0);
    b.clear();
    utils::MemoryBufferStream fs(&b);
    static_cast<const Serializable *>(model)->Save(&fs);
    if (cap >= b.size() && !b.empty())
        std::memcpy(buf, b.data(), b.size());
    return b.size();
}
} // namespace detail

/* Joins the job: rabit's arguments (mock=..., rabit_*=...) and rally's
 * (rally_*=...) as rally/rabit_c_api.h says.  false when that failed. */
inline bool Init(int argc, char *argv[])
{
    return RabitInit(argc, argv);
}

/* Leaves the job. */
inline bool Finalize()
{
    return RabitFinalize();
}

inline int GetRank()
{
    return RabitGetRank();
}

inline int GetWorldSize()
{
    return RabitGetWorldSize();
}

/* true under a launcher (rally-run, a dmlc tracker), false alone. */
inline bool IsDistributed()
{
    return RabitIsDistributed() != 0;
}

inline std::string GetProcessorName()
{
    char name[256];
    rbt_ulong n = 0;
    RabitGetProcessorName(name, &n, sizeof name);
    return std::string(name, static_cast<size_t>(n));
}

/* Prints msg on the launcher's standard output, behind this rank. */
inline void TrackerPrint(const std::string &msg)
{
    RabitTrackerPrint(msg.c_str());
}

inline void TrackerPrintf(const char *fmt, ...)
{
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    int n = std::vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    std::string msg(n > 0 ? static_cast<size_t>(n) : 0, '\0');
    if (n > 0)
        std::vsnprintf(&msg[0], msg.size() + 1, fmt, again);
    va_end(again);
    RabitTrackerPrint(msg.c_str());
}

/* In place: root's size bytes reach every rank. */
inline void Broadcast(void *sendrecv_data, size_t size, int root)
{
    RabitBroadcast(sendrecv_data, size, root);
}

/* root's vector reaches every rank (resized there): its size, then its
 * elements, which must be plain values. */
template <typename DType> inline void Broadcast(std::vector<DType> *sendrecv_data, int root)
{
    uint64_t n = sendrecv_data->size();
    Broadcast(&n, sizeof n, root);
    sendrecv_data->resize(static_cast<size_t>(n));
    if (n != 0)
        Broadcast(&(*sendrecv_data)[0], sendrecv_data->size() * sizeof(DType), root);
}

inline void Broadcast(std::string *sendrecv_data, int root)
{
    uint64_t n = sendrecv_data->size();
    Broadcast(&n, sizeof n, root);
    sendrecv_data->resize(static_cast<size_t>(n));
    if (n != 0)
        Broadcast(&(*sendrecv_data)[0], sendrecv_data->size(), root);
}

/* In place: count elements reduced with OP (op::Max, Min, Sum, BitOR) over
 * every rank.  prepare_fun(prepare_arg), when given, fills sendrecvbuf
 * first; it is not called when the result is recovered from other ranks. */
template <typename OP, typename DType>
inline void Allreduce(DType *sendrecvbuf, size_t count, void (*prepare_fun)(void *) = NULL,
                      void *prepare_arg = NULL)
{
    RabitAllreduce(sendrecvbuf, count, detail::TypeOf<DType>::kType, OP::kType, prepare_fun,
                   prepare_arg);
}

/* The same with a lambda (or any callable) as the prepare function. */
template <typename OP, typename DType>
inline void Allreduce(DType *sendrecvbuf, size_t count, std::function<void()> prepare_fun)
{
    RabitAllreduce(sendrecvbuf, count, detail::TypeOf<DType>::kType, OP::kType,
                   prepare_fun ? detail::InvokeFunction : NULL, &prepare_fun);
}

/* Loads the newest checkpoint into the models and returns its version: 0
 * on a fresh start (the models are not touched), >= 1 after a restart.
 * local_model, when given, is this rank's own model (use one always or
 * never). */
inline int LoadCheckPoint(Serializable *global_model, Serializable *local_model = NULL)
{
    char *g = NULL, *l = NULL;
    rbt_ulong glen = 0, llen = 0;
    int version = RabitLoadCheckPoint(&g, &glen, local_model != NULL ? &l : NULL,
                                      local_model != NULL ? &llen : NULL);
    if (version == 0)
        return 0;
    utils::MemoryFixSizeBuffer gs(g, glen);
    global_model->Load(&gs);
    if (local_model != NULL) {
        utils::MemoryFixSizeBuffer ls(l, llen);
        local_model->Load(&ls);
    }
    return version;
}

/* Checkpoints the models (serialised and copied): the version goes up by
 * one.  global_model must be the same on every rank (rally compares their
 * digests); local_model is copied to the next ranks on the ring. */
inline void CheckPoint(const Serializable *global_model, const Serializable *local_model = NULL)
{
    std::string &g = detail::ModelBuffer(0), &l = detail::ModelBuffer(1);
    g.clear();
    l.clear();
    utils::MemoryBufferStream gs(&g);
    global_model->Save(&gs);
    if (local_model != NULL) {
        utils::MemoryBufferStream ls(&l);
        local_model->Save(&ls);
    }
    RabitCheckPoint(g.data(), g.size(), local_model != NULL ? l.data() : NULL, l.size());
}

/* A checkpoint that serialises nothing now: global_model is saved only
 * when a recovering rank needs it, so it must stay unchanged until the last
 * collective before the next checkpoint has returned (in "LazyCheckPoint,
 * code1, Allreduce, code2, Broadcast, code3, LazyCheckPoint" only code3 may
 * change it).  No local model. */
inline void LazyCheckPoint(const Serializable *global_model)
{
    rally_t *r = detail::Handle("LazyCheckPoint");
    detail::Need(r, "LazyCheckPoint",
                 rally_lazy_checkpoint(r, detail::SaveLazy,
                                       const_cast<Serializable *>(global_model)));
}

/* How many checkpoints the job has taken. */
inline int VersionNumber()
{
    return RabitVersionNumber();
}

/* Allreduce with a program's own operator on a plain struct DType (no
 * pointers): freduce(dst, src) makes dst the reduction of the two; it must
 * be associative and commutative, as rabit required. */
template <typename DType, void (*freduce)(DType &dst, const DType &src)> // NOLINT
class Reducer {
public:
    Reducer() : id_(detail::ReducerId(typeid(Reducer).name())) {}

    inline void Allreduce(DType *sendrecvbuf, size_t count, void (*prepare_fun)(void *) = NULL,
                          void *prepare_arg = NULL)
    {
        rally_t *r = detail::Handle("Reducer::Allreduce");
        detail::Need(r, "Reducer::Allreduce",
                     rally_register_reducer(r, id_, sizeof(DType), 1, Reduce, NULL));
        detail::Need(r, "Reducer::Allreduce",
                     rally_allreduce_custom(r, sendrecvbuf, count, id_, prepare_fun, prepare_arg));
    }
    inline void Allreduce(DType *sendrecvbuf, size_t count, std::function<void()> prepare_fun)
    {
        Allreduce(sendrecvbuf, count, prepare_fun ? detail::InvokeFunction : NULL, &prepare_fun);
    }

private:
    /* rally's buffers promise no alignment: each element is copied out */
    static void Reduce(void *inout, const void *in, size_t count, void *arg)
    {
        char *dst = static_cast<char *>(inout);
        const char *src = static_cast<const char *>(in);
        for (size_t i = 0; i < count; i++) {
            DType a, b;
            std::memcpy(&a, dst + i * sizeof(DType), sizeof(DType));
            std::memcpy(&b, src + i * sizeof(DType), sizeof(DType));
            freduce(a, b);
            std::memcpy(dst + i * sizeof(DType), &a, sizeof(DType));
        }
    }
    int id_;
};

/* Allreduce of objects that serialise into at most max_nbyte bytes each:
 * DType has Load(Stream &), Save(Stream &) const and
 * Reduce(const DType &src, size_t max_nbyte), which makes *this the
 * reduction of the two (associative and commutative). */
template <typename DType> class SerializeReducer {
public:
    SerializeReducer() : id_(detail::ReducerId(typeid(SerializeReducer).name())) {}

    inline void Allreduce(DType *sendrecvobj, size_t max_nbyte, size_t count,
                          void (*prepare_fun)(void *) = NULL, void *prepare_arg = NULL)
    {
        rally_t *r = detail::Handle("SerializeReducer::Allreduce");
        buffer_.resize(max_nbyte * count);
        Prepare p = {this, sendrecvobj, max_nbyte, count, prepare_fun, prepare_arg};
        detail::Need(r, "SerializeReducer::Allreduce",
                     rally_register_reducer(r, id_, max_nbyte, 1, Reduce,
                                            reinterpret_cast<void *>(max_nbyte)));
        detail::Need(r, "SerializeReducer::Allreduce",
                     rally_allreduce_custom(r, &buffer_[0], count, id_, Fill, &p));
        for (size_t i = 0; i < count; i++) {
            utils::MemoryFixSizeBuffer fs(&buffer_[i * max_nbyte], max_nbyte);
            sendrecvobj[i].Load(fs);
        }
    }
    inline void Allreduce(DType *sendrecvobj, size_t max_nbyte, size_t count,
                          std::function<void()> prepare_fun)
    {
        Allreduce(sendrecvobj, max_nbyte, count, prepare_fun ? detail::InvokeFunction : NULL,
                  &prepare_fun);
    }

private:
    struct Prepare {
        SerializeReducer *self;
        DType *objs;
        size_t max_nbyte, count;
        void (*fun)(void *);
        void *arg;
    };
    /* the prepare function rally calls when it computes the result: the
     * program's own, then the objects into their slots */
    static void Fill(void *arg)
    {
        Prepare *p = static_cast<Prepare *>(arg);
        if (p->fun != NULL)
            p->fun(p->arg);
        for (size_t i = 0; i < p->count; i++) {
            utils::MemoryFixSizeBuffer fs(&p->self->buffer_[i * p->max_nbyte], p->max_nbyte);
            p->objs[i].Save(fs);
        }
    }
    static void Reduce(void *inout, const void *in, size_t count, void *arg)
    {
        size_t nbyte = reinterpret_cast<size_t>(arg);
        char *dst = static_cast<char *>(inout);
        char *src = const_cast<char *>(static_cast<const char *>(in)); /* only read */
        DType a, b;
        for (size_t i = 0; i < count; i++) {
            utils::MemoryFixSizeBuffer fa(dst + i * nbyte, nbyte), fb(src + i * nbyte, nbyte);
            a.Load(fa);
            b.Load(fb);
            a.Reduce(static_cast<const DType &>(b), nbyte);
            fa.Seek(0);
            a.Save(fa);
        }
    }
    int id_;
    std::string buffer_; /* the objects serialised, reused from call to call */
};

} // namespace rabit
#endif
