/*
 * rabit/internal/io.h — rabit's Streams over memory (rabit::utils):
 * MemoryFixSizeBuffer over a buffer of a fixed size, MemoryBufferStream
 * over a std::string that grows as it is written.  The C++ layer moves
 * models and reducers' objects through them; programs may use them too.
 */
#ifndef RABIT_INTERNAL_IO_H_
#define RABIT_INTERNAL_IO_H_

#include <cstring>
#include <string>

#include "../serializable.h"
#include "./utils.h"

namespace rabit {
namespace utils {

/* Reads and writes buffer_size bytes at p_buffer, from the start on; a
 * write past the end is an error (it ends the process, as rabit's did). */
class MemoryFixSizeBuffer : public Stream {
public:
    using Stream::Read; /* the templated ones too */
    using Stream::Write;
    MemoryFixSizeBuffer(void *p_buffer, size_t buffer_size)
        : p_buffer_(static_cast<char *>(p_buffer)), buffer_size_(buffer_size), curr_ptr_(0)
    {
    }
    size_t Read(void *ptr, size_t size)
    {
        size_t n = buffer_size_ - curr_ptr_ < size ? buffer_size_ - curr_ptr_ : size;
        if (n > 0)
            std::memcpy(ptr, p_buffer_ + curr_ptr_, n);
        curr_ptr_ += n;
        return n;
    }
    void Write(const void *ptr, size_t size)
    {
        Check(size <= buffer_size_ - curr_ptr_,
              "rabit: MemoryFixSizeBuffer: %zu bytes do not fit in the %zu left", size,
              buffer_size_ - curr_ptr_);
        if (size > 0)
            std::memcpy(p_buffer_ + curr_ptr_, ptr, size);
        curr_ptr_ += size;
    }
    void Seek(size_t pos) { curr_ptr_ = pos < buffer_size_ ? pos : buffer_size_; }
    size_t Tell() const { return curr_ptr_; }
    bool AtEnd() const { return curr_ptr_ == buffer_size_; }

private:
    char *p_buffer_;
    size_t buffer_size_;
    size_t curr_ptr_;
};

/* Reads and writes *p_buffer, from the start on; writes past its end
 * extend it. */
class MemoryBufferStream : public Stream {
public:
    using Stream::Read; /* the templated ones too */
    using Stream::Write;
    explicit MemoryBufferStream(std::string *p_buffer) : p_buffer_(p_buffer), curr_ptr_(0) {}
    size_t Read(void *ptr, size_t size)
    {
        size_t left = p_buffer_->size() - curr_ptr_;
        size_t n = left < size ? left : size;
        if (n > 0)
            std::memcpy(ptr, p_buffer_->data() + curr_ptr_, n);
        curr_ptr_ += n;
        return n;
    }
    void Write(const void *ptr, size_t size)
    {
        if (size == 0)
            return;
        if (curr_ptr_ + size > p_buffer_->size())
            p_buffer_->resize(curr_ptr_ + size);
        std::memcpy(&(*p_buffer_)[curr_ptr_], ptr, size);
        curr_ptr_ += size;
    }
    void Seek(size_t pos) { curr_ptr_ = pos < p_buffer_->size() ? pos : p_buffer_->size(); }
    size_t Tell() const { return curr_ptr_; }
    bool AtEnd() const { return curr_ptr_ == p_buffer_->size(); }

private:
    std::string *p_buffer_;
    size_t curr_ptr_;
};

} // namespace utils
} // namespace rabit
#endif
