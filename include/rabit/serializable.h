/*
 * rabit/serializable.h — rabit's Stream and Serializable (dmlc's, which
 * rabit used): a model that a checkpoint can keep is a Serializable that
 * writes itself to a Stream and reads itself back.
 *
 * Stream's templated Write and Read take what dmlc's did, in its byte
 * layout (this host's byte order):
 *   - a trivially copyable value (int, double, a struct of them): its bytes;
 *   - std::string: its length as a uint64_t, then its bytes;
 *   - std::vector<T>: its length as a uint64_t, then its elements (their
 *     bytes at once when T is trivially copyable, else each as above).
 * Read returns false when the stream ends before the value does.
 */
#ifndef RABIT_SERIALIZABLE_H_
#define RABIT_SERIALIZABLE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace rabit {

class Stream;

namespace serializer {
/* How a T goes to a Stream: its bytes, when that is all it is. */
template <typename T> struct Handler {
    static_assert(std::is_trivially_copyable<T>::value,
                  "Stream::Write/Read take trivially copyable types, std::string and "
                  "std::vector of those");
    static void Write(Stream *s, const T &v);
    static bool Read(Stream *s, T *v);
};
template <> struct Handler<std::string> {
    static void Write(Stream *s, const std::string &v);
    static bool Read(Stream *s, std::string *v);
};
template <typename T> struct Handler<std::vector<T> > {
    static void Write(Stream *s, const std::vector<T> &v);
    static bool Read(Stream *s, std::vector<T> *v);
};
} // namespace serializer

class Stream {
public:
    /* Reads up to size bytes into ptr; returns how many it read (fewer only
     * at the end of the stream). */
    virtual size_t Read(void *ptr, size_t size) = 0;
    /* Writes size bytes from ptr. */
    virtual void Write(const void *ptr, size_t size) = 0;
    virtual ~Stream() {}

    template <typename T> void Write(const T &data)
    {
        serializer::Handler<T>::Write(this, data);
    }
    template <typename T> bool Read(T *out_data)
    {
        return serializer::Handler<T>::Read(this, out_data);
    }
};

/* A model a checkpoint keeps (LoadCheckPoint, CheckPoint, LazyCheckPoint). */
class Serializable {
public:
    virtual ~Serializable() {}
    virtual void Load(Stream *fi) = 0;
    virtual void Save(Stream *fo) const = 0;
};

namespace serializer {
template <typename T> inline void Handler<T>::Write(Stream *s, const T &v)
{
    s->Write(static_cast<const void *>(&v), sizeof v);
}
template <typename T> inline bool Handler<T>::Read(Stream *s, T *v)
{
    return s->Read(static_cast<void *>(v), sizeof *v) == sizeof *v;
}

inline void Handler<std::string>::Write(Stream *s, const std::string &v)
{
    uint64_t n = v.size();
    s->Write(&n, sizeof n);
    if (n > 0)
        s->Write(v.data(), v.size());
}
inline bool Handler<std::string>::Read(Stream *s, std::string *v)
{
    uint64_t n;
    if (s->Read(&n, sizeof n) != sizeof n)
        return false;
    v->resize(static_cast<size_t>(n));
    return n == 0 || s->Read(&(*v)[0], v->size()) == v->size();
}

/* A vector of plain values is one block of bytes; of anything else, each
 * element in turn. */
template <typename T>
inline void WriteElems(Stream *s, const std::vector<T> &v, std::true_type)
{
    if (!v.empty())
        s->Write(v.data(), v.size() * sizeof(T));
}
template <typename T>
inline void WriteElems(Stream *s, const std::vector<T> &v, std::false_type)
{
    for (size_t i = 0; i < v.size(); i++)
        Handler<T>::Write(s, v[i]);
}
template <typename T> inline bool ReadElems(Stream *s, std::vector<T> *v, std::true_type)
{
    size_t n = v->size() * sizeof(T);
    return n == 0 || s->Read(v->data(), n) == n;
}
template <typename T> inline bool ReadElems(Stream *s, std::vector<T> *v, std::false_type)
{
    for (size_t i = 0; i < v->size(); i++)
        if (!Handler<T>::Read(s, &(*v)[i]))
            return false;
    return true;
}
template <typename T>
inline void Handler<std::vector<T> >::Write(Stream *s, const std::vector<T> &v)
{
    uint64_t n = v.size();
    s->Write(&n, sizeof n);
    WriteElems(s, v, std::integral_constant<bool, std::is_trivially_copyable<T>::value>());
}
template <typename T> inline bool Handler<std::vector<T> >::Read(Stream *s, std::vector<T> *v)
{
    uint64_t n;
    if (s->Read(&n, sizeof n) != sizeof n)
        return false;
    v->resize(static_cast<size_t>(n));
    return ReadElems(s, v, std::integral_constant<bool, std::is_trivially_copyable<T>::value>());
}
} // namespace serializer
} // namespace rabit
#endif
